// A tier below the KV block pool: blocks evicted from the prefix cache are kept there (host
// RAM, then disk) by their prefix hash, and a later prefix hit copies them back into a fresh
// pool block instead of recomputing them. The interface is the three operations a prefix cache
// needs (lookup / insert / fetch); each tier evicts on its own, least recently used first.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "kv/block_pool.h"

namespace strata {

// Cumulative counters of one tier. Atomic: the disk tier's writer thread updates them while
// the engine thread reads them for /metrics.
struct TierStats {
  std::atomic<int64_t> hits{0};           // blocks fetched back into the pool
  std::atomic<int64_t> bytes_read{0};     // payload bytes fetched
  std::atomic<int64_t> bytes_written{0};  // payload bytes stored
  std::atomic<int64_t> read_ns{0};        // time spent fetching
  std::atomic<int64_t> write_ns{0};       // time spent storing
  std::atomic<int64_t> bytes_stored{0};   // payload bytes held now
  std::atomic<int64_t> blocks_stored{0};  // blocks held now
  std::atomic<int64_t> rejected{0};       // entries that did not verify (deleted)
  std::atomic<int64_t> dropped{0};        // inserts not stored (full queue, I/O error)
};

class KvTier {
 public:
  virtual ~KvTier() = default;
  virtual const char* name() const = 0;
  // Whether the tier holds the block. No I/O; a later fetch may still fail (then it is a miss).
  virtual bool lookup(const BlockHash& hash) = 0;
  // Copies the block's `n` payload bytes into `out`. False when the tier does not hold it or
  // what it holds does not verify (the entry is then dropped).
  virtual bool fetch(const BlockHash& hash, uint8_t* out, size_t n) = 0;
  // Stores a copy of the block (a block the tier already holds is only marked recently used).
  virtual void insert(const BlockHash& hash, const uint8_t* data, size_t n) = 0;
  virtual const TierStats& stats() const = 0;
};

}  // namespace strata
