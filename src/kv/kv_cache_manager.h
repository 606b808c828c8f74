// Block tables of sequences over the shared block pool: prefix-cache lookups, growth with
// copy-on-write of shared blocks, publication of full blocks, forking for parallel sampling.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "kv/block_pool.h"

namespace strata {

// The KV state of one sequence.
struct SequenceKv {
  std::vector<BlockId> blocks;  // block table: position p lives in blocks[p / block_size]
  // Entries [n_head_kept, n_head_kept + n_dropped) were given back (kDroppedBlock): out of every
  // window. n_head_kept: leading blocks kept for attention sinks (0 for a plain window).
  size_t n_head_kept = 0;
  size_t n_dropped = 0;
  std::vector<BlockHash> hashes;  // content hashes of the leading full blocks, in order
  size_t n_publish_tried = 0;     // leading blocks already offered to the prefix cache
  // Score-based eviction (kv_evict_policy.h): positions given back. Every position the sequence
  // still refers to (p >= the first kept position after the evicted ones) lives at cache slot
  // p - pos_offset; the token counts passed to reserve and truncate are positions. An evicted
  // sequence's blocks are private compactions, never published.
  int64_t pos_offset = 0;
};

// A compaction planned by KvCacheManager::plan_compaction: the new block table, and the blocks
// to give back once the token moves into it have run.
struct KvCompaction {
  std::vector<BlockId> blocks;
  std::vector<BlockId> release;
};

// A block-table entry whose block was given back because no future query can attend to it.
inline constexpr BlockId kDroppedBlock = -1;

struct BlockCopy {
  BlockId src, dst;
};

class KvOffload;

class KvCacheManager {
 public:
  KvCacheManager(int32_t n_blocks, int32_t block_size, bool prefix_caching);

  int32_t block_size() const { return block_size_; }
  bool prefix_caching() const { return prefix_caching_; }
  BlockPool& pool() { return pool_; }
  const BlockPool& pool() const { return pool_; }
  int32_t blocks_for(int64_t n_tokens) const {
    return static_cast<int32_t>((n_tokens + block_size_ - 1) / block_size_);
  }

  // Tiers below the pool (nullptr: none): evicted blocks are demoted to them, published blocks
  // persisted, and acquire_prefix restores from them what the pool lacks. Not owned.
  void set_offload(KvOffload* offload);

  // Finds the longest run of cached full blocks at the start of `tokens`, covering at most
  // `max_tokens` tokens, and takes a reference on each. seq must hold no blocks. Returns the
  // number of tokens covered (a multiple of the block size; 0 when prefix caching is off).
  // With offload tiers, blocks past the pool's hits are restored from them into fresh blocks
  // while the tiers have them and the pool has room.
  int32_t acquire_prefix(SequenceKv& seq, const std::vector<int32_t>& tokens, int32_t max_tokens,
                         const BlockHash& root);

  // Grows the block table to cover n_total positions. Positions >= write_from will be written
  // this step: a block among them shared with another sequence is replaced by a private copy
  // (its copy is appended to `copies`, to be executed before the write). Returns false, with
  // nothing changed, when the pool cannot supply the blocks.
  [[nodiscard]] bool reserve(SequenceKv& seq, int64_t n_total, int64_t write_from,
                             std::vector<BlockCopy>& copies);

  // Offers every block whose tokens are all in the cache (n_computed of them) to the prefix
  // cache. Call only after the forward pass that wrote them succeeded.
  void publish(SequenceKv& seq, const std::vector<int32_t>& tokens, int64_t n_computed,
               const BlockHash& root);

  // Shrinks the sequence to its first n_tokens positions: blocks past them go back to the pool
  // (rejected speculative tokens, rollback). Blocks that stay are not touched, so a shared or
  // published block never changes.
  void truncate(SequenceKv& seq, int64_t n_tokens);

  // Sliding-window attention: gives back the leading blocks that hold only positions below
  // first_needed (no later query attends to them), leaving kDroppedBlock in their entries. Only
  // the sequence's reference is dropped: a block another sequence or the prefix cache shares is
  // left as it is. Returns the number of blocks given back.
  int32_t drop_before(SequenceKv& seq, int64_t first_needed) { return drop_between(seq, 0, first_needed); }
  // Attention sinks: as drop_before, but the first head_blocks blocks stay (the sink tokens).
  // head_blocks must be the same at every call for a sequence.
  int32_t drop_between(SequenceKv& seq, size_t head_blocks, int64_t first_needed);

  // Score-based eviction: plans keeping n_keep tokens in blocks_for(n_keep) blocks. Entry j of the
  // new table is the sequence's old block j when only this sequence holds it and it is not
  // published (written in place: every move reads a slot at or after the one it writes), else a
  // fresh block. Returns false, with nothing changed, when the pool lacks the fresh blocks. The
  // caller moves the kept tokens (at most n_keep) into the new table, then commits.
  [[nodiscard]] bool plan_compaction(const SequenceKv& seq, int64_t n_keep, KvCompaction& out);
  // Installs the new table, gives back the blocks no longer used (a shared or published one only
  // loses this sequence's reference) and adds n_evicted to seq.pos_offset.
  void commit_compaction(SequenceKv& seq, KvCompaction&& plan, int64_t n_evicted);

  // Gives back all the sequence's blocks (tail first, so the LRU evicts tails before heads).
  void free(SequenceKv& seq);

  // The child shares every block of the parent (n > 1 parallel sampling).
  void fork(const SequenceKv& parent, SequenceKv& child);

 private:
  void extend_hashes(SequenceKv& seq, const std::vector<int32_t>& tokens, int64_t n_tokens,
                     const BlockHash& root);

  int32_t restore_prefix(SequenceKv& seq, size_t n_full);

  BlockPool pool_;
  KvOffload* offload_ = nullptr;
  int32_t block_size_;
  bool prefix_caching_;
};

}  // namespace strata
