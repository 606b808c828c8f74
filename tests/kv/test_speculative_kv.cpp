// The KV manager under speculative decoding: truncation gives back exactly the blocks past the
// kept tokens, and in a long randomized run of prefills, speculative verification rounds with
// random rejections, forks, preemptions and aborts, no written position ever lies in a shared
// block, and every prefix-cache hit holds exactly the accepted tokens it is looked up by (a
// shadow copy of what was written where is the reference).
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "kv/kv_cache_manager.h"
#include "kv/prefix_hash.h"

namespace strata {
namespace {

TEST(KvCacheManager, TruncateReleasesOnlyTheBlocksPastTheKeptTokens) {
  KvCacheManager kv(8, 4, true);
  SequenceKv s;
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(kv.reserve(s, 14, 0, copies));  // 4 blocks
  ASSERT_EQ(s.blocks.size(), 4u);
  const std::vector<BlockId> before = s.blocks;
  kv.truncate(s, 9);  // positions 0..8: 3 blocks
  EXPECT_EQ(s.blocks, std::vector<BlockId>(before.begin(), before.begin() + 3));
  EXPECT_EQ(kv.pool().ref_count(before[3]), 0);
  EXPECT_EQ(kv.pool().n_free(), 5);
  kv.truncate(s, 12);  // growing is reserve's job: nothing changes
  EXPECT_EQ(s.blocks.size(), 3u);
  kv.truncate(s, 0);
  EXPECT_TRUE(s.blocks.empty());
  EXPECT_EQ(kv.pool().n_free(), 8);
}

TEST(KvCacheManager, TruncatingASharerLeavesTheSharedBlocksToTheOther) {
  KvCacheManager kv(8, 4, false);
  SequenceKv a, b;
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(kv.reserve(a, 8, 0, copies));
  kv.fork(a, b);
  kv.truncate(b, 3);
  EXPECT_EQ(b.blocks.size(), 1u);
  EXPECT_EQ(kv.pool().ref_count(a.blocks[0]), 2);
  EXPECT_EQ(kv.pool().ref_count(a.blocks[1]), 1);
}

struct Seq {
  std::vector<int32_t> tokens;  // accepted tokens
  int64_t computed = 0;
  SequenceKv kv;
};

class SpeculativeKvRun {
 public:
  static constexpr int kBlocks = 48, kBs = 4;
  KvCacheManager kv{kBlocks, kBs, true};
  BlockHash root = prefix_root_hash({"model"});
  std::vector<std::vector<int32_t>> content =
      std::vector<std::vector<int32_t>>(kBlocks, std::vector<int32_t>(kBs, -1));
  int64_t hits = 0, rejected = 0, preemptions = 0;

  void apply(const std::vector<BlockCopy>& copies) {
    for (const BlockCopy& c : copies)
      content[static_cast<size_t>(c.dst)] = content[static_cast<size_t>(c.src)];
  }
  // The forward pass writes token t at position p: never into a block another table shares.
  void write(Seq& s, int64_t p, int32_t t) {
    const BlockId b = s.kv.blocks[static_cast<size_t>(p / kBs)];
    ASSERT_EQ(kv.pool().ref_count(b), 1) << "a write reached a shared block";
    content[static_cast<size_t>(b)][static_cast<size_t>(p % kBs)] = t;
  }
  // A fresh lookup of the sequence's accepted tokens: every hit block holds exactly them.
  void check_hits(const std::vector<int32_t>& tokens) {
    SequenceKv probe;
    const int32_t n = kv.acquire_prefix(probe, tokens, static_cast<int32_t>(tokens.size()), root);
    for (size_t i = 0; i < probe.blocks.size(); ++i)
      for (int j = 0; j < kBs; ++j)
        ASSERT_EQ(content[static_cast<size_t>(probe.blocks[i])][static_cast<size_t>(j)],
                  tokens[i * kBs + static_cast<size_t>(j)])
            << "the prefix cache returned a block with tokens that were not accepted";
    hits += n;
    kv.free(probe);
  }
  // A verification round: the last token plus k drafts are written; m of them are accepted.
  bool verify(Seq& s, std::mt19937& rng) {
    const int k = static_cast<int>(rng() % 6);
    const int64_t last = static_cast<int64_t>(s.tokens.size()) - 1;
    std::vector<BlockCopy> copies;
    if (!kv.reserve(s.kv, last + 1 + k, last, copies)) return false;
    apply(copies);
    std::vector<int32_t> drafts;
    for (int i = 0; i < k; ++i) drafts.push_back(static_cast<int32_t>(rng() % 50));
    write(s, last, s.tokens.back());
    for (int i = 0; i < k; ++i) write(s, last + 1 + i, drafts[static_cast<size_t>(i)]);
    const int m = k == 0 ? 0 : static_cast<int>(rng() % (k + 1));
    rejected += k - m;
    for (int i = 0; i < m; ++i) s.tokens.push_back(drafts[static_cast<size_t>(i)]);
    s.tokens.push_back(static_cast<int32_t>(50 + rng() % 50));  // the target's own token: never a draft value
    s.computed = last + 1 + m;
    kv.truncate(s.kv, static_cast<int64_t>(s.tokens.size()));
    kv.publish(s.kv, s.tokens, s.computed, root);
    return true;
  }
  bool prefill(Seq& s, std::mt19937& rng) {
    const int64_t n = std::min<int64_t>(static_cast<int64_t>(s.tokens.size()) - s.computed, 1 + rng() % 6);
    std::vector<BlockCopy> copies;
    if (!kv.reserve(s.kv, s.computed + n, s.computed, copies)) return false;
    apply(copies);
    for (int64_t p = s.computed; p < s.computed + n; ++p) write(s, p, s.tokens[static_cast<size_t>(p)]);
    s.computed += n;
    kv.publish(s.kv, s.tokens, s.computed, root);
    return true;
  }
};

TEST(KvCacheManager, SpeculativeRoundsNeverLeakRejectedTokensIntoSharedOrCachedBlocks) {
  SpeculativeKvRun run;
  std::mt19937 rng(99);
  std::map<int, Seq> live;
  int next_id = 0;
  for (int step = 0; step < 100000; ++step) {
    int op = static_cast<int>(rng() % 10);
    if (live.size() >= 24 && op < 2) op = 9;
    if (op < 2 || live.empty()) {
      Seq s;
      const int family = static_cast<int>(rng() % 3);
      const int len = 1 + static_cast<int>(rng() % 14);
      for (int i = 0; i < len; ++i)
        s.tokens.push_back(i < 8 ? family * 10 + i : static_cast<int32_t>(rng() % 50));
      s.computed = run.kv.acquire_prefix(s.kv, s.tokens, static_cast<int32_t>(s.tokens.size()) - 1, run.root);
      live.emplace(next_id++, std::move(s));
      continue;
    }
    auto it = live.begin();
    std::advance(it, static_cast<long>(rng() % live.size()));
    Seq& s = it->second;
    const bool decoding = s.computed == static_cast<int64_t>(s.tokens.size()) - 1;
    bool ok = true;
    if (op < 8)
      ok = decoding ? run.verify(s, rng) : run.prefill(s, rng);
    else if (op == 8 && !s.kv.blocks.empty() && decoding) {  // fork after the prompt
      Seq child;
      child.tokens = s.tokens;
      child.computed = s.computed;
      run.kv.fork(s.kv, child.kv);
      live.emplace(next_id++, std::move(child));
    } else {
      run.kv.free(s.kv);
      live.erase(it);
      continue;
    }
    if (!ok) {  // out of blocks: preempted, recomputed later
      run.kv.free(s.kv);
      s.computed = 0;
      ++run.preemptions;
    }
    if (::testing::Test::HasFatalFailure()) return;
    if (step % 7 == 0) run.check_hits(s.tokens);
    if (::testing::Test::HasFatalFailure()) return;
  }
  for (auto& [id, s] : live) run.kv.free(s.kv);
  EXPECT_EQ(run.kv.pool().n_free(), SpeculativeKvRun::kBlocks);
  EXPECT_GT(run.hits, 0);
  EXPECT_GT(run.rejected, 0);
  EXPECT_GT(run.preemptions, 0);
}

}  // namespace
}  // namespace strata
