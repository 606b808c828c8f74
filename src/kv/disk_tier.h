// The disk tier: one file per KV block in a directory, <hex block hash>.kv in the format of
// tier_file.h, bounded by bytes with least-recently-used eviction of files. It survives a
// restart: a new DiskTier on the same directory indexes the files whose header carries its
// fingerprint; files that do not verify (foreign model or KV layout, truncated, corrupted,
// leftover temporaries) are deleted, never trusted.
//
// I/O: the engine thread never writes. insert() copies the block into a queue bounded by bytes
// (a full queue drops the block, counted in stats().dropped) and a writer thread writes it to a
// temporary file and renames it into place, so readers — this process or another one on the
// same directory — only ever see whole files. fetch() reads one file on the calling thread: one
// block's bytes, bounded. The destructor writes out what is still queued.
#pragma once

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "kv/kv_tier.h"

namespace strata {

class DiskTier final : public KvTier {
 public:
  // Creates `dir` if needed and indexes what is there. block_bytes: the payload of every block
  // (files of another size are rejected). Throws strata::Error if the directory cannot be made.
  DiskTier(std::string dir, size_t capacity_bytes, const BlockHash& fingerprint, size_t block_bytes,
           size_t queue_bytes = size_t{64} << 20);
  ~DiskTier() override;
  DiskTier(const DiskTier&) = delete;
  DiskTier& operator=(const DiskTier&) = delete;

  const char* name() const override { return "disk"; }
  bool lookup(const BlockHash& hash) override;
  bool fetch(const BlockHash& hash, uint8_t* out, size_t n) override;
  void insert(const BlockHash& hash, const uint8_t* data, size_t n) override;
  const TierStats& stats() const override { return stats_; }

  // Waits until every queued block is written (tests, shutdown).
  void flush();
  size_t n_files() const;
  std::filesystem::path file_of(const BlockHash& hash) const;

 private:
  struct Pending {
    BlockHash hash;
    std::vector<uint8_t> bytes;
  };
  void scan();
  void writer_loop();
  void write_one(const Pending& p);
  void index_file(const BlockHash& hash, size_t file_bytes);  // mu_ held
  void evict_over_capacity();                                 // mu_ held
  void forget(const BlockHash& hash);                         // mu_ held
  void reject(const std::filesystem::path& path, const char* why);

  std::filesystem::path dir_;
  size_t capacity_;
  BlockHash fingerprint_;
  size_t block_bytes_;
  size_t queue_limit_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // writer: work or stop; flush(): queue drained
  std::deque<Pending> queue_;   // guarded by mu_
  // The queued blocks by hash (deque elements stay put while others are pushed and popped).
  std::unordered_map<BlockHash, const Pending*, BlockHashHasher> pending_;  // guarded by mu_
  size_t queued_bytes_ = 0;                                                 // guarded by mu_
  bool writing_ = false;      // guarded by mu_: the writer holds a popped block
  bool stop_ = false;         // guarded by mu_
  std::list<BlockHash> lru_;  // guarded by mu_; front = least recently used file
  struct File {
    std::list<BlockHash>::iterator lru;
    size_t bytes;
  };
  std::unordered_map<BlockHash, File, BlockHashHasher> files_;  // guarded by mu_
  size_t file_bytes_ = 0;                                       // guarded by mu_
  bool write_error_logged_ = false, read_error_logged_ = false;
  uint64_t tmp_counter_ = 0;  // writer thread only
  TierStats stats_;
  std::thread writer_;
};

}  // namespace strata
