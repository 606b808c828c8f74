// The host-RAM tier: evicted KV blocks as plain byte copies (in their KV element type) in an
// LRU bounded by bytes. What falls off its end goes to the next tier (disk), if any.
#pragma once

#include <list>
#include <unordered_map>
#include <vector>

#include "kv/kv_tier.h"

namespace strata {

class HostTier final : public KvTier {
 public:
  // next: where blocks evicted from RAM go (nullptr: they are dropped).
  HostTier(size_t capacity_bytes, KvTier* next);

  const char* name() const override { return "host"; }
  bool lookup(const BlockHash& hash) override;
  bool fetch(const BlockHash& hash, uint8_t* out, size_t n) override;
  void insert(const BlockHash& hash, const uint8_t* data, size_t n) override;
  const TierStats& stats() const override { return stats_; }

  size_t capacity() const { return capacity_; }
  size_t bytes() const { return bytes_; }

 private:
  struct Entry {
    BlockHash hash;
    std::vector<uint8_t> bytes;
  };
  void touch(std::list<Entry>::iterator it) { lru_.splice(lru_.end(), lru_, it); }

  size_t capacity_;
  KvTier* next_;
  std::list<Entry> lru_;  // front = least recently used
  std::unordered_map<BlockHash, std::list<Entry>::iterator, BlockHashHasher> index_;
  size_t bytes_ = 0;
  TierStats stats_;
};

}  // namespace strata
