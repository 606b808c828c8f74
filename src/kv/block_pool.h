// A fixed pool of KV-cache blocks with reference counts and a prefix cache.
//
// Blocks are identified by index into the KV storage. A block in use has a reference count
// > 0; sequences sharing a prefix hold references to the same blocks. A full block can be
// published under the hash of its contents (see prefix_hash.h); when its last reference goes,
// it stays cached — findable by hash — on an LRU list, and is only evicted (hash dropped) when
// the pool needs room and no plain free block is left. Running out of blocks is reported as a
// return value (the scheduler preempts), never as an exception.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

namespace strata {

using BlockId = int32_t;
using BlockHash = std::array<uint8_t, 32>;  // SHA-256

struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const;
};

class BlockPool {
 public:
  explicit BlockPool(int32_t n_blocks);

  int32_t n_total() const { return static_cast<int32_t>(ref_counts_.size()); }
  // Blocks an allocation can take: plain free blocks plus evictable cached ones.
  int32_t n_free() const { return static_cast<int32_t>(free_list_.size()) + n_cached_free_; }
  int32_t n_used() const { return n_total() - n_free(); }
  // Free blocks still holding a published prefix (evictable, LRU order).
  int32_t n_cached_free() const { return n_cached_free_; }

  // Takes n blocks (reference count 1) and appends them to `out`: plain free blocks first
  // (most recently freed first), then cached ones, least recently used first (their hashes
  // are dropped). All or nothing: returns false, leaving everything untouched, when fewer than
  // n blocks can be had.
  [[nodiscard]] bool allocate(int32_t n, std::vector<BlockId>& out);
  // Adds a reference to a block in use (sharing).
  void retain(BlockId block);
  // Drops a reference. At zero a published block becomes cached-free (most recently used end
  // of the LRU list), any other block becomes plain free.
  void release(BlockId block);
  // Releases in reverse order, so a sequence's tail blocks are evicted before its head.
  void release_all(const std::vector<BlockId>& blocks);
  int32_t ref_count(BlockId block) const;
  // Whether the block holds a published prefix (its bytes must never change).
  bool published(BlockId block) const;

  // Prefix cache.
  std::optional<BlockId> find_cached(const BlockHash& hash) const;
  // Takes a reference to a block found by find_cached (reviving it if it was cached-free).
  void acquire_cached(BlockId block);
  // Publishes a full block in use under `hash`. Returns false (nothing changes) when another
  // block already holds that hash, or this block is already published.
  bool publish(BlockId block, const BlockHash& hash);
  // Called with a cached block and its hash just before eviction drops the hash (the block's
  // bytes are still intact): the offload tiers demote it (kv_offload.h).
  void set_evict_hook(std::function<void(BlockId, const BlockHash&)> hook) { on_evict_ = std::move(hook); }

 private:
  void lru_push_back(BlockId b);
  void lru_remove(BlockId b);
  void evict(BlockId b);

  std::vector<int32_t> ref_counts_;               // [n_blocks]
  std::vector<BlockId> free_list_;                // plain free blocks, LIFO
  std::vector<std::optional<BlockHash>> hashes_;  // [n_blocks] published hash
  std::unordered_map<BlockHash, BlockId, BlockHashHasher> by_hash_;
  // Doubly linked LRU list of cached-free blocks (head = least recently used).
  std::vector<BlockId> prev_, next_;  // [n_blocks], -1 = none
  BlockId lru_head_ = -1, lru_tail_ = -1;
  int32_t n_cached_free_ = 0;
  std::function<void(BlockId, const BlockHash&)> on_evict_;
};

}  // namespace strata
