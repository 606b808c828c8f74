// Score-based eviction on the block-table side (kv/kv_evict_policy.h, KvCacheManager's
// compaction): SnapKV's selection against a float64 reference written here from the paper (max
// pool over the window's summed attention, top-k, in token order); H2O's heavy hitters against
// a brute-force count of the tokens that beat each one; recent's last tokens; the compaction's block
// accounting under a randomized property test with shared, published and forked blocks: freed
// blocks return to the pool, shared and published blocks are never written (not in the new
// table) and only lose this sequence's reference, reference counts add up.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "core/check.h"
#include "kv/kv_cache_manager.h"
#include "kv/kv_evict_policy.h"
#include "kv/prefix_hash.h"

namespace strata {
namespace {

std::vector<int32_t> reference_select(const std::vector<float>& s, int budget, int pool) {
  const int n = int(s.size());
  std::vector<double> pooled(n);
  for (int j = 0; j < n; ++j) {
    double m = -1e300;
    for (int d = j - pool / 2; d <= j + pool / 2; ++d)
      if (d >= 0 && d < n) m = std::max(m, double(s[d]));
    pooled[j] = m;
  }
  std::vector<int32_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return pooled[a] > pooled[b]; });
  idx.resize(std::min(n, budget));
  std::sort(idx.begin(), idx.end());
  return idx;
}

TEST(SnapKvSelect, IsTheTopBudgetOfTheMaxPooledScoresInTokenOrder) {
  std::mt19937 gen(3);
  for (int n : {1, 2, 31, 33, 257, 1000})
    for (int budget : {1, 7, 32, 300})
      for (int pool : {1, 3, 7}) {
        std::vector<float> s(n);
        // Coarse values: plenty of ties, which go to the earlier token.
        std::uniform_int_distribution<int> u(0, 20);
        for (float& x : s) x = float(u(gen)) / 8.0f;
        EXPECT_EQ(snapkv_select(s.data(), n, budget, pool), reference_select(s, budget, pool))
            << "n " << n << " budget " << budget << " pool " << pool;
      }
}

TEST(SnapKvSelect, NaNScoresRankLast) {
  std::vector<float> s = {0.1f, NAN, 0.3f, 0.2f};
  EXPECT_EQ(snapkv_select(s.data(), 4, 2, 1), (std::vector<int32_t>{2, 3}));
}

// H2O's heavy hitters by brute force: token j is kept iff fewer than `budget` tokens beat it
// (a higher score, or the same score and earlier); NaN is below everything.
std::vector<int32_t> reference_heavy(const std::vector<float>& s, int budget) {
  auto key = [&](int j) { return std::isnan(s[j]) ? -1e300 : double(s[j]); };
  std::vector<int32_t> out;
  for (int j = 0; j < int(s.size()); ++j) {
    int beaten_by = 0;
    for (int i = 0; i < int(s.size()); ++i) beaten_by += key(i) > key(j) || (key(i) == key(j) && i < j);
    if (beaten_by < budget) out.push_back(j);
  }
  return out;
}

TEST(H2OSelect, IsTheBudgetHeaviestInTokenOrder) {
  std::mt19937 gen(5);
  for (int n : {1, 2, 31, 33, 257, 600})
    for (int budget : {1, 7, 32, 300}) {
      std::vector<float> s(n);
      std::uniform_int_distribution<int> u(0, 30);  // coarse: ties go to the earlier token
      for (float& x : s) x = float(u(gen)) / 4.0f;
      if (n > 3) s[2] = NAN;
      EXPECT_EQ(h2o_select(s.data(), n, budget), reference_heavy(s, budget))
          << "n " << n << " budget " << budget;
    }
  // Accumulated attention, not pooled: a heavy token's neighbours are not pulled in.
  std::vector<float> s = {0.1f, 5.0f, 0.2f, 0.3f, 0.0f, 4.0f};
  EXPECT_EQ(h2o_select(s.data(), 6, 2), (std::vector<int32_t>{1, 5}));
  EXPECT_EQ(snapkv_select(s.data(), 6, 2, 3), (std::vector<int32_t>{0, 1}));
}

TEST(RecentSelect, IsTheLastBudgetTokens) {
  for (int n : {0, 1, 5, 40})
    for (int budget : {0, 1, 4, 40, 100}) {
      std::vector<int32_t> want;
      for (int j = 0; j < n; ++j)
        if (j >= n - budget) want.push_back(j);
      EXPECT_EQ(recent_select(n, budget), want) << n << " " << budget;
    }
}

TEST(KvEvictPolicy, RangesAreCheckedWithTheFlagNames) {
  EXPECT_NO_THROW((KvEvictPolicy{0, 32, 7}.validate()));
  EXPECT_NO_THROW((KvEvictPolicy{100, 1, 1}.validate()));
  auto msg = [](KvEvictPolicy p) {
    try {
      p.validate();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(msg({-1, 32, 7}).find("--kv-budget"), std::string::npos);
  EXPECT_NE(msg({10, 0, 7}).find("--kv-evict-window"), std::string::npos);
  EXPECT_NE(msg({10, 32, 4}).find("--kv-evict-pool"), std::string::npos);
  EXPECT_TRUE(KvEvictPolicy({10, 4, 1}).applies(15));
  EXPECT_FALSE(KvEvictPolicy({10, 4, 1}).applies(14));
  EXPECT_FALSE(KvEvictPolicy({}).applies(1000));
}

// Sequences over one pool: prefix-shared blocks, published blocks, forks; each step compacts,
// grows or frees one. After each, every block's reference count equals the number of table
// entries holding it, and blocks no table holds are free (plain or cached).
TEST(KvCompaction, BlockAccountingUnderRandomizedCompactions) {
  constexpr int32_t kBs = 4, kBlocks = 96;
  KvCacheManager kv(kBlocks, kBs, /*prefix_caching=*/true);
  std::mt19937 gen(17);
  std::vector<SequenceKv> seqs(6);
  std::vector<std::vector<int32_t>> toks(6);
  std::vector<int64_t> len(6, 0);  // positions computed
  const BlockHash root = prefix_root_hash({"evict-test", ""});
  auto check = [&] {
    std::map<BlockId, int> refs;
    for (const SequenceKv& s : seqs)
      for (BlockId b : s.blocks)
        if (b != kDroppedBlock) ++refs[b];
    int used = 0;
    for (BlockId b = 0; b < kBlocks; ++b) {
      const int want = refs.count(b) ? refs[b] : 0;
      ASSERT_EQ(kv.pool().ref_count(b), want) << "block " << b;
      used += want > 0;
    }
    ASSERT_EQ(kv.pool().n_used(), used);
  };
  int compactions = 0;
  for (int step = 0; step < 20000; ++step) {
    const size_t i = gen() % seqs.size();
    SequenceKv& s = seqs[i];
    const int op = int(gen() % 10);
    if (s.blocks.empty()) {  // a new prompt: a common prefix (shared through the cache) + own tokens
      kv.free(s);            // resets what a truncation to nothing left (pos_offset)
      const int n = 8 + int(gen() % 40);
      toks[i].assign(n, 0);
      for (int t = 0; t < n; ++t) toks[i][t] = t < 12 ? t : int(gen() % 50);
      const int hit = kv.acquire_prefix(s, toks[i], n - 1, root);
      std::vector<BlockCopy> copies;
      if (!kv.reserve(s, n, hit, copies)) {
        kv.free(s);
        continue;
      }
      len[i] = n;
      kv.publish(s, toks[i], n, root);
    } else if (op < 3) {  // compact to a random smaller size
      const int64_t live = len[i] - s.pos_offset;
      const int64_t n_keep = 1 + int64_t(gen() % uint64_t(live));
      std::set<BlockId> shared_or_published;
      std::map<BlockId, int> refs_before;
      for (BlockId b : s.blocks) {
        refs_before[b] = kv.pool().ref_count(b);
        if (kv.pool().ref_count(b) > 1 || kv.pool().published(b)) shared_or_published.insert(b);
      }
      const std::vector<BlockId> old = s.blocks;
      KvCompaction plan;
      if (!kv.plan_compaction(s, n_keep, plan)) continue;
      ASSERT_EQ(int64_t(plan.blocks.size()), kv.blocks_for(n_keep));
      for (size_t j = 0; j < plan.blocks.size(); ++j) {
        const BlockId b = plan.blocks[j];
        ASSERT_FALSE(shared_or_published.count(b)) << "a shared or published block would be written";
        if (j < old.size() && b == old[j]) continue;  // in place: private
        ASSERT_EQ(std::count(old.begin(), old.end(), b), 0) << "a fresh block must be new";
      }
      const int64_t evicted = len[i] - s.pos_offset - n_keep;
      kv.commit_compaction(s, std::move(plan), evicted);
      for (const auto& [b, r] : refs_before) {
        const bool still = std::count(s.blocks.begin(), s.blocks.end(), b) > 0;
        ASSERT_EQ(kv.pool().ref_count(b), still ? r : r - 1) << "block " << b;
      }
      ASSERT_EQ(len[i] - s.pos_offset, n_keep);
      ++compactions;
    } else if (op < 6) {  // decode a few tokens at positions after the eviction
      const int64_t n = len[i] + 1 + int64_t(gen() % 6);
      std::vector<BlockCopy> copies;
      if (kv.reserve(s, n, len[i], copies)) len[i] = n;
      ASSERT_EQ(int64_t(s.blocks.size()), kv.blocks_for(len[i] - s.pos_offset));
      kv.publish(s, toks[i], std::min<int64_t>(len[i], int64_t(toks[i].size())), root);
    } else if (op < 7 && len[i] - 1 >= s.pos_offset) {  // roll back a token
      kv.truncate(s, --len[i]);
    } else if (op < 8) {  // fork into another slot
      const size_t j = gen() % seqs.size();
      if (j != i && seqs[j].blocks.empty()) {
        kv.fork(s, seqs[j]);
        toks[j] = toks[i];
        len[j] = len[i];
      }
    } else {
      kv.free(s);
      len[i] = 0;
    }
    check();
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(compactions, 1000);
  for (SequenceKv& s : seqs) kv.free(s);
  EXPECT_EQ(kv.pool().n_free(), kBlocks);
}

TEST(KvCompaction, PositionsAfterTheEvictionMapToCacheSlots) {
  KvCacheManager kv(16, 4, false);
  SequenceKv s;
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(kv.reserve(s, 30, 0, copies));  // 8 blocks
  KvCompaction plan;
  ASSERT_TRUE(kv.plan_compaction(s, 10, plan));
  kv.commit_compaction(s, std::move(plan), 20);
  EXPECT_EQ(s.blocks.size(), 3u);
  EXPECT_EQ(kv.pool().n_used(), 3);
  ASSERT_TRUE(kv.reserve(s, 31, 30, copies));  // position 30 -> slot 10: still block 2
  EXPECT_EQ(s.blocks.size(), 3u);
  ASSERT_TRUE(kv.reserve(s, 33, 31, copies));  // slot 12 needs block 3
  EXPECT_EQ(s.blocks.size(), 4u);
  kv.truncate(s, 31);
  EXPECT_EQ(s.blocks.size(), 3u);
  EXPECT_DEATH(kv.truncate(s, 5), "eviction gave back");
}

// H2O compacts again during generation: the offsets add up, each compaction keeps
// blocks_for(n_keep) blocks, frees the rest, and a forked sibling's shared blocks are replaced
// by fresh ones (never written) while the sibling keeps its own table untouched.
TEST(KvCompaction, RepeatedCompactionsDuringGenerationAddTheirOffsets) {
  KvCacheManager kv(32, 4, false);
  SequenceKv s, sibling;
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(kv.reserve(s, 30, 0, copies));  // 8 blocks
  KvCompaction plan;
  ASSERT_TRUE(kv.plan_compaction(s, 10, plan));  // budget + window = 10
  kv.commit_compaction(s, std::move(plan), 20);
  kv.fork(s, sibling);  // n > 1: the compacted blocks are shared
  const std::vector<BlockId> shared = s.blocks;
  int64_t n = 30;  // positions computed
  for (int round = 0; round < 3; ++round) {
    // A block's worth of generation: positions n .. n + 3 (slots 10 .. 13), then compact to 10.
    ASSERT_TRUE(kv.reserve(s, n + 4, n, copies));
    n += 4;
    EXPECT_EQ(s.blocks.size(), 4u);
    ASSERT_TRUE(kv.plan_compaction(s, 10, plan));
    for (size_t j = 0; j < plan.blocks.size(); ++j)
      if (round == 0 && j < shared.size()) {
        EXPECT_NE(plan.blocks[j], shared[j]) << "a shared block is written";
      }
    kv.commit_compaction(s, std::move(plan), 4);
    EXPECT_EQ(s.pos_offset, 20 + 4 * (round + 1));
    EXPECT_EQ(s.blocks.size(), 3u);
  }
  EXPECT_EQ(sibling.blocks, shared);
  for (BlockId b : shared) EXPECT_EQ(kv.pool().ref_count(b), 1);  // the sibling's only
  EXPECT_EQ(kv.pool().n_used(), 6);                               // 3 each
  ASSERT_TRUE(kv.reserve(s, n + 1, n, copies));                   // position n -> slot 10, block 2
  EXPECT_EQ(s.blocks.size(), 3u);
  kv.free(s);
  kv.free(sibling);
  EXPECT_EQ(kv.pool().n_used(), 0);
}

}  // namespace
}  // namespace strata
