#include "kv/kv_cache_manager.h"

#include <algorithm>

#include "core/check.h"
#include "kv/kv_offload.h"
#include "kv/prefix_hash.h"

namespace strata {

KvCacheManager::KvCacheManager(int32_t n_blocks, int32_t block_size, bool prefix_caching)
    : pool_(n_blocks), block_size_(block_size), prefix_caching_(prefix_caching) {
  STRATA_CHECK(block_size > 0);
}

void KvCacheManager::extend_hashes(SequenceKv& seq, const std::vector<int32_t>& tokens, int64_t n_tokens,
                                   const BlockHash& root) {
  const size_t full = static_cast<size_t>(n_tokens / block_size_);
  while (seq.hashes.size() < full) {
    const size_t i = seq.hashes.size();
    const BlockHash& parent = i == 0 ? root : seq.hashes[i - 1];
    seq.hashes.push_back(
        chain_block_hash(parent, tokens.data() + i * static_cast<size_t>(block_size_), block_size_));
  }
}

int32_t KvCacheManager::acquire_prefix(SequenceKv& seq, const std::vector<int32_t>& tokens,
                                       int32_t max_tokens, const BlockHash& root) {
  STRATA_CHECK(seq.blocks.empty(), "prefix lookup on a sequence that holds blocks");
  if (!prefix_caching_ || max_tokens < block_size_) return 0;
  const int64_t limit = std::min<int64_t>(max_tokens, static_cast<int64_t>(tokens.size()));
  extend_hashes(seq, tokens, limit, root);
  const size_t n_full = static_cast<size_t>(limit / block_size_);
  for (size_t i = 0; i < n_full; ++i) {
    const auto hit = pool_.find_cached(seq.hashes[i]);
    if (!hit) break;
    pool_.acquire_cached(*hit);
    seq.blocks.push_back(*hit);
  }
  if (offload_) restore_prefix(seq, n_full);
  seq.n_publish_tried = seq.blocks.size();  // hits are published already
  return static_cast<int32_t>(seq.blocks.size()) * block_size_;
}

void KvCacheManager::set_offload(KvOffload* offload) {
  offload_ = offload;
  if (offload)
    pool_.set_evict_hook([offload](BlockId b, const BlockHash& h) { offload->demote(b, h); });
  else
    pool_.set_evict_hook(nullptr);
}

int32_t KvCacheManager::restore_prefix(SequenceKv& seq, size_t n_full) {
  int32_t n = 0;
  for (size_t i = seq.blocks.size(); i < n_full; ++i, ++n) {
    const BlockHash& h = seq.hashes[i];
    if (const auto hit = pool_.find_cached(h)) {  // a later block the pool still holds
      pool_.acquire_cached(*hit);
      seq.blocks.push_back(*hit);
      continue;
    }
    if (!offload_->lookup(h)) break;
    std::vector<BlockId> fresh;
    if (!pool_.allocate(1, fresh)) break;  // no room: the rest is recomputed
    if (!offload_->restore(h, fresh[0]) || !pool_.publish(fresh[0], h)) {
      pool_.release(fresh[0]);
      break;
    }
    seq.blocks.push_back(fresh[0]);
  }
  return n;
}

bool KvCacheManager::reserve(SequenceKv& seq, int64_t n_total, int64_t write_from,
                             std::vector<BlockCopy>& copies) {
  STRATA_CHECK(write_from >= seq.pos_offset, "writing a position eviction gave back");
  n_total -= seq.pos_offset;
  write_from -= seq.pos_offset;
  const int32_t need_total = blocks_for(n_total);
  const int32_t have = static_cast<int32_t>(seq.blocks.size());
  // Shared blocks among those about to be written need a private copy each.
  std::vector<size_t> shared;
  for (int64_t b = write_from / block_size_; b < std::min<int64_t>(have, need_total); ++b)
    if (pool_.ref_count(seq.blocks[static_cast<size_t>(b)]) > 1) shared.push_back(static_cast<size_t>(b));
  const int32_t n_new = std::max(0, need_total - have) + static_cast<int32_t>(shared.size());
  std::vector<BlockId> fresh;
  if (!pool_.allocate(n_new, fresh)) return false;
  size_t next = 0;
  for (size_t b : shared) {
    const BlockId copy = fresh[next++];
    copies.push_back({seq.blocks[b], copy});
    pool_.release(seq.blocks[b]);
    seq.blocks[b] = copy;
  }
  for (; next < fresh.size(); ++next) seq.blocks.push_back(fresh[next]);
  return true;
}

void KvCacheManager::publish(SequenceKv& seq, const std::vector<int32_t>& tokens, int64_t n_computed,
                             const BlockHash& root) {
  if (!prefix_caching_ || seq.pos_offset > 0) return;  // compacted blocks match no token chain
  STRATA_CHECK(n_computed <= static_cast<int64_t>(tokens.size()));
  extend_hashes(seq, tokens, n_computed, root);
  const size_t full = std::min(seq.blocks.size(), static_cast<size_t>(n_computed / block_size_));
  for (size_t i = seq.n_publish_tried; i < full; ++i)
    if (seq.blocks[i] != kDroppedBlock && pool_.publish(seq.blocks[i], seq.hashes[i]) && offload_)
      offload_->persist(seq.blocks[i], seq.hashes[i]);
  seq.n_publish_tried = std::max(seq.n_publish_tried, full);
}

void KvCacheManager::truncate(SequenceKv& seq, int64_t n_tokens) {
  STRATA_CHECK(n_tokens >= seq.pos_offset, "truncating into positions eviction gave back");
  n_tokens -= seq.pos_offset;
  const size_t keep = static_cast<size_t>(blocks_for(n_tokens));
  STRATA_CHECK(seq.n_dropped == 0 || keep >= seq.n_head_kept + seq.n_dropped,
               "truncating into blocks the window already dropped");
  while (seq.blocks.size() > keep) {
    pool_.release(seq.blocks.back());
    seq.blocks.pop_back();
  }
  const size_t full = static_cast<size_t>(n_tokens / block_size_);
  if (seq.hashes.size() > full) seq.hashes.resize(full);
  seq.n_publish_tried = std::min(seq.n_publish_tried, full);
}

int32_t KvCacheManager::drop_between(SequenceKv& seq, size_t head_blocks, int64_t first_needed) {
  if (seq.n_dropped == 0) seq.n_head_kept = head_blocks;
  STRATA_CHECK(seq.n_head_kept == head_blocks, "the sink blocks of a sequence changed");
  const size_t end =
      std::min(seq.blocks.size(), static_cast<size_t>(std::max<int64_t>(0, first_needed) / block_size_));
  int32_t n = 0;
  for (size_t i = head_blocks + seq.n_dropped; i < end; ++i, ++seq.n_dropped, ++n) {
    pool_.release(seq.blocks[i]);
    seq.blocks[i] = kDroppedBlock;
  }
  return n;
}

void KvCacheManager::free(SequenceKv& seq) {
  // Tail first (as release_all), so the LRU evicts tails before heads.
  for (size_t i = seq.blocks.size(); i > 0; --i)
    if (seq.blocks[i - 1] != kDroppedBlock) pool_.release(seq.blocks[i - 1]);
  seq.blocks.clear();
  seq.n_head_kept = 0;
  seq.n_dropped = 0;
  seq.n_publish_tried = 0;
  seq.pos_offset = 0;
}

bool KvCacheManager::plan_compaction(const SequenceKv& seq, int64_t n_keep, KvCompaction& out) {
  STRATA_CHECK(seq.n_dropped == 0, "eviction with a window");
  const auto nb = static_cast<size_t>(blocks_for(n_keep));
  STRATA_CHECK(n_keep >= 0 && nb <= seq.blocks.size(), "compaction cannot grow a sequence");
  auto in_place = [&](BlockId b) { return pool_.ref_count(b) == 1 && !pool_.published(b); };
  int32_t n_fresh = 0;
  for (size_t j = 0; j < nb; ++j) n_fresh += in_place(seq.blocks[j]) ? 0 : 1;
  std::vector<BlockId> fresh;
  if (!pool_.allocate(n_fresh, fresh)) return false;
  out.blocks.clear();
  out.release.clear();
  size_t next = 0;
  for (size_t j = 0; j < seq.blocks.size(); ++j) {
    const BlockId b = seq.blocks[j];
    const bool keep = j < nb && in_place(b);
    if (j < nb) out.blocks.push_back(keep ? b : fresh[next++]);
    if (!keep) out.release.push_back(b);
  }
  return true;
}

void KvCacheManager::commit_compaction(SequenceKv& seq, KvCompaction&& plan, int64_t n_evicted) {
  STRATA_CHECK(n_evicted >= 0);
  for (size_t i = plan.release.size(); i > 0; --i) pool_.release(plan.release[i - 1]);
  seq.blocks = std::move(plan.blocks);
  seq.hashes.clear();
  seq.n_publish_tried = seq.blocks.size();
  seq.pos_offset += n_evicted;
}

void KvCacheManager::fork(const SequenceKv& parent, SequenceKv& child) {
  STRATA_CHECK(child.blocks.empty());
  for (BlockId b : parent.blocks)
    if (b != kDroppedBlock) pool_.retain(b);
  child = parent;
}

}  // namespace strata
