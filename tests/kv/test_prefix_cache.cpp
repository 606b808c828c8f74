// Prefix caching in the block pool and the cache manager: exact block ids, reference counts
// and eviction order; copy-on-write; a long randomized run checking the pool's invariants.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "kv/kv_cache_manager.h"
#include "kv/prefix_hash.h"

namespace strata {
namespace {

BlockHash hash_of(int v) {
  const int32_t t[1] = {v};
  return chain_block_hash(prefix_root_hash({}), t, 1);
}

TEST(BlockPoolPrefix, FreedPublishedBlocksStayCachedAndAreEvictedLeastRecentlyUsedFirst) {
  BlockPool pool(4);
  std::vector<BlockId> a;
  ASSERT_TRUE(pool.allocate(3, a));  // 0 1 2
  ASSERT_TRUE(pool.publish(0, hash_of(0)));
  ASSERT_TRUE(pool.publish(1, hash_of(1)));
  ASSERT_TRUE(pool.publish(2, hash_of(2)));
  pool.release(1);  // LRU: 1
  pool.release(0);  // LRU: 1 0
  pool.release(2);  // LRU: 1 0 2
  EXPECT_EQ(pool.n_free(), 4);
  EXPECT_EQ(pool.n_cached_free(), 3);
  EXPECT_EQ(pool.find_cached(hash_of(0)), 0);
  // Plain free block 3 goes first, then the least recently freed cached blocks: 1, then 0.
  std::vector<BlockId> b;
  ASSERT_TRUE(pool.allocate(3, b));
  EXPECT_EQ(b, (std::vector<BlockId>{3, 1, 0}));
  EXPECT_FALSE(pool.find_cached(hash_of(1)));
  EXPECT_FALSE(pool.find_cached(hash_of(0)));
  EXPECT_EQ(pool.find_cached(hash_of(2)), 2);
  // Reviving a cached block takes it off the LRU list.
  pool.acquire_cached(2);
  EXPECT_EQ(pool.ref_count(2), 1);
  EXPECT_EQ(pool.n_free(), 0);
  std::vector<BlockId> none;
  EXPECT_FALSE(pool.allocate(1, none));
}

TEST(BlockPoolPrefix, DuplicateHashIsNotPublishedTwice) {
  BlockPool pool(2);
  std::vector<BlockId> a;
  ASSERT_TRUE(pool.allocate(2, a));
  EXPECT_TRUE(pool.publish(0, hash_of(7)));
  EXPECT_FALSE(pool.publish(1, hash_of(7)));
  EXPECT_FALSE(pool.publish(0, hash_of(8)));
  pool.release(1);
  EXPECT_EQ(pool.n_cached_free(), 0);  // unpublished: plain free
}

TEST(KvCacheManager, PrefixLookupSharesFullBlocksOnly) {
  KvCacheManager kv(8, 4, true);
  const BlockHash root = prefix_root_hash({"m"});
  std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  SequenceKv a;
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(kv.reserve(a, 10, 0, copies));
  EXPECT_EQ(a.blocks, (std::vector<BlockId>{0, 1, 2}));
  kv.publish(a, tokens, 10, root);  // blocks 0 and 1 are full
  SequenceKv b;
  EXPECT_EQ(kv.acquire_prefix(b, tokens, 9, root), 8);
  EXPECT_EQ(b.blocks, (std::vector<BlockId>{0, 1}));
  EXPECT_EQ(kv.pool().ref_count(0), 2);
  // A different root (salt) finds nothing.
  SequenceKv c;
  EXPECT_EQ(kv.acquire_prefix(c, tokens, 9, prefix_root_hash({"m", "salt"})), 0);
  // A different token in block 0 breaks the chain from the start.
  SequenceKv d;
  std::vector<int32_t> other = tokens;
  other[0] = 99;
  EXPECT_EQ(kv.acquire_prefix(d, other, 9, root), 0);
  kv.free(a);
  kv.free(b);
  EXPECT_EQ(kv.pool().n_free(), 8);
  EXPECT_EQ(kv.pool().n_cached_free(), 2);
}

TEST(KvCacheManager, ForkedPartialBlockIsCopiedOnWrite) {
  KvCacheManager kv(8, 4, false);
  SequenceKv parent, child;
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(kv.reserve(parent, 6, 0, copies));  // blocks 0, 1 (block 1 half full)
  kv.fork(parent, child);
  EXPECT_EQ(kv.pool().ref_count(1), 2);
  // The child writes position 6: block 1 is shared, so it gets a private copy.
  ASSERT_TRUE(kv.reserve(child, 7, 6, copies));
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].src, 1);
  EXPECT_EQ(copies[0].dst, 2);
  EXPECT_EQ(child.blocks, (std::vector<BlockId>{0, 2}));
  EXPECT_EQ(kv.pool().ref_count(1), 1);
  EXPECT_EQ(kv.pool().ref_count(0), 2);  // the full block stays shared
  // The parent now owns block 1 alone: no copy.
  copies.clear();
  ASSERT_TRUE(kv.reserve(parent, 7, 6, copies));
  EXPECT_TRUE(copies.empty());
  kv.free(parent);
  kv.free(child);
  EXPECT_EQ(kv.pool().n_free(), 8);
}

TEST(KvCacheManager, ReserveIsAllOrNothing) {
  KvCacheManager kv(3, 4, false);
  SequenceKv a;
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(kv.reserve(a, 8, 0, copies));
  SequenceKv b;
  EXPECT_FALSE(kv.reserve(b, 8, 0, copies));
  EXPECT_TRUE(b.blocks.empty());
  EXPECT_EQ(kv.pool().n_free(), 1);
}

// Randomized: arrivals (with shared prefixes), growth, forks, preemptions and aborts, checking
// after every step that free + used = total, that reference counts equal the number of tables
// holding each block, and that the pool is entirely free once everything is released.
TEST(KvCacheManager, RandomizedInvariantsOverManySteps) {
  constexpr int kBlocks = 64, kBs = 4;
  KvCacheManager kv(kBlocks, kBs, true);
  const BlockHash root = prefix_root_hash({"model"});
  std::mt19937 rng(1234);
  struct Seq {
    std::vector<int32_t> tokens;
    int64_t computed = 0;
    SequenceKv kv;
  };
  std::map<int, Seq> live;
  int next_id = 0;
  int64_t hits = 0, preemptions = 0;
  std::vector<int> refs(kBlocks);
  auto check = [&] {
    std::fill(refs.begin(), refs.end(), 0);
    for (auto& [id, s] : live)
      for (BlockId b : s.kv.blocks) ++refs[static_cast<size_t>(b)];
    int used = 0;
    for (BlockId b = 0; b < kBlocks; ++b) {
      ASSERT_EQ(kv.pool().ref_count(b), refs[static_cast<size_t>(b)]) << b;
      used += refs[static_cast<size_t>(b)] > 0;
    }
    ASSERT_EQ(kv.pool().n_free() + used, kBlocks);
  };
  for (int step = 0; step < 100000; ++step) {
    int op = static_cast<int>(rng() % 10);
    if (live.size() >= 48 && (op < 3 || op == 7)) op = 8;  // keep the population bounded
    if (op < 3 || live.empty()) {  // arrival: a prompt from a small family of prefixes
      Seq s;
      const int family = static_cast<int>(rng() % 4);
      const int len = 1 + static_cast<int>(rng() % 20);
      for (int i = 0; i < len; ++i) s.tokens.push_back(i < 8 ? family * 100 + i : static_cast<int32_t>(rng() % 50));
      s.computed = kv.acquire_prefix(s.kv, s.tokens, static_cast<int32_t>(s.tokens.size()) - 1, root);
      hits += s.computed;
      live.emplace(next_id++, std::move(s));
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      Seq& s = it->second;
      if (op < 7) {  // compute a chunk (or one decode token)
        if (s.computed == static_cast<int64_t>(s.tokens.size())) s.tokens.push_back(static_cast<int32_t>(rng() % 50));
        const int64_t n = std::min<int64_t>(static_cast<int64_t>(s.tokens.size()) - s.computed, 1 + rng() % 6);
        std::vector<BlockCopy> copies;
        if (kv.reserve(s.kv, s.computed + n, s.computed, copies)) {
          s.computed += n;
          kv.publish(s.kv, s.tokens, s.computed, root);
        } else {  // out of blocks: preempt this sequence (recompute later)
          kv.free(s.kv);
          s.computed = 0;
          ++preemptions;
        }
      } else if (op < 8 && !s.kv.blocks.empty()) {  // fork (parallel sampling)
        Seq child;
        child.tokens = s.tokens;
        child.computed = s.computed;
        kv.fork(s.kv, child.kv);
        live.emplace(next_id++, std::move(child));
      } else {  // finish or abort
        kv.free(s.kv);
        live.erase(it);
      }
    }
    check();
    if (::testing::Test::HasFatalFailure()) return;
  }
  for (auto& [id, s] : live) kv.free(s.kv);
  live.clear();
  check();
  EXPECT_EQ(kv.pool().n_free(), kBlocks);
  EXPECT_GT(hits, 0);
  EXPECT_GT(preemptions, 0);
}

}  // namespace
}  // namespace strata
