#include "kv/block_pool.h"

#include <cstring>

#include "core/check.h"

namespace strata {

size_t BlockHashHasher::operator()(const BlockHash& h) const {
  size_t v;
  std::memcpy(&v, h.data(), sizeof v);  // already a cryptographic hash: any 8 bytes will do
  return v;
}

BlockPool::BlockPool(int32_t n_blocks)
    : ref_counts_(static_cast<size_t>(n_blocks), 0),
      hashes_(static_cast<size_t>(n_blocks)),
      prev_(static_cast<size_t>(n_blocks), -1),
      next_(static_cast<size_t>(n_blocks), -1) {
  STRATA_CHECK(n_blocks >= 0);
  free_list_.reserve(static_cast<size_t>(n_blocks));
  for (BlockId b = n_blocks - 1; b >= 0; --b) free_list_.push_back(b);  // block 0 handed out first
}

void BlockPool::lru_push_back(BlockId b) {
  prev_[static_cast<size_t>(b)] = lru_tail_;
  next_[static_cast<size_t>(b)] = -1;
  if (lru_tail_ >= 0)
    next_[static_cast<size_t>(lru_tail_)] = b;
  else
    lru_head_ = b;
  lru_tail_ = b;
  ++n_cached_free_;
}

void BlockPool::lru_remove(BlockId b) {
  const BlockId p = prev_[static_cast<size_t>(b)], n = next_[static_cast<size_t>(b)];
  if (p >= 0)
    next_[static_cast<size_t>(p)] = n;
  else
    lru_head_ = n;
  if (n >= 0)
    prev_[static_cast<size_t>(n)] = p;
  else
    lru_tail_ = p;
  prev_[static_cast<size_t>(b)] = next_[static_cast<size_t>(b)] = -1;
  --n_cached_free_;
}

void BlockPool::evict(BlockId b) {
  if (on_evict_) on_evict_(b, *hashes_[static_cast<size_t>(b)]);
  lru_remove(b);
  by_hash_.erase(*hashes_[static_cast<size_t>(b)]);
  hashes_[static_cast<size_t>(b)].reset();
}

bool BlockPool::allocate(int32_t n, std::vector<BlockId>& out) {
  STRATA_CHECK(n >= 0);
  if (n > n_free()) return false;
  for (int32_t i = 0; i < n; ++i) {
    BlockId b;
    if (!free_list_.empty()) {
      b = free_list_.back();
      free_list_.pop_back();
    } else {
      b = lru_head_;
      evict(b);
    }
    ref_counts_[static_cast<size_t>(b)] = 1;
    out.push_back(b);
  }
  return true;
}

void BlockPool::retain(BlockId block) {
  STRATA_CHECK(block >= 0 && block < n_total() && ref_counts_[static_cast<size_t>(block)] > 0,
               "retain of a free or unknown block ", block);
  ++ref_counts_[static_cast<size_t>(block)];
}

void BlockPool::release(BlockId block) {
  STRATA_CHECK(block >= 0 && block < n_total() && ref_counts_[static_cast<size_t>(block)] > 0,
               "double free of block ", block);
  if (--ref_counts_[static_cast<size_t>(block)] > 0) return;
  if (hashes_[static_cast<size_t>(block)])
    lru_push_back(block);
  else
    free_list_.push_back(block);
}

void BlockPool::release_all(const std::vector<BlockId>& blocks) {
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) release(*it);
}

int32_t BlockPool::ref_count(BlockId block) const {
  STRATA_CHECK(block >= 0 && block < n_total());
  return ref_counts_[static_cast<size_t>(block)];
}

std::optional<BlockId> BlockPool::find_cached(const BlockHash& hash) const {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  return it->second;
}

void BlockPool::acquire_cached(BlockId block) {
  STRATA_CHECK(block >= 0 && block < n_total() && hashes_[static_cast<size_t>(block)], "block ", block,
               " is not cached");
  if (ref_counts_[static_cast<size_t>(block)] == 0) lru_remove(block);
  ++ref_counts_[static_cast<size_t>(block)];
}

bool BlockPool::publish(BlockId block, const BlockHash& hash) {
  STRATA_CHECK(block >= 0 && block < n_total() && ref_counts_[static_cast<size_t>(block)] > 0,
               "publish of a free block ", block);
  if (hashes_[static_cast<size_t>(block)] || by_hash_.count(hash)) return false;
  hashes_[static_cast<size_t>(block)] = hash;
  by_hash_.emplace(hash, block);
  return true;
}

}  // namespace strata

namespace strata {

bool BlockPool::published(BlockId block) const {
  STRATA_CHECK(block >= 0 && block < n_total(), "block ", block, " out of range");
  return hashes_[static_cast<size_t>(block)].has_value();
}

}  // namespace strata
