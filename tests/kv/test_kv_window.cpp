// KvCacheManager with attention sinks and a sliding window (drop_between): the randomized
// invariants of test_prefix_cache.cpp (arrivals with shared prefixes, growth, forks, preemptions,
// aborts) with the window applied after every computed chunk, plus a model of the blocks'
// contents: every block records which token each slot was written with, so a shared or
// prefix-cached block that the window or a copy-on-write changed would show up as a sequence
// reading another sequence's tokens.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "core/check.h"
#include "kv/kv_cache_manager.h"
#include "kv/kv_window_policy.h"
#include "kv/prefix_hash.h"

namespace strata {
namespace {

struct Policy {
  int32_t sinks, window;
};

class KvWindowInvariants : public ::testing::TestWithParam<Policy> {};

TEST_P(KvWindowInvariants, RandomizedStepsKeepSinksWindowAndSharedBlocks) {
  constexpr int kBlocks = 20, kBs = 4;  // small enough that sequences get preempted
  const KvWindowPolicy policy{GetParam().sinks, GetParam().window};
  const size_t head = static_cast<size_t>(policy.sink_blocks(kBs));
  KvCacheManager kv(kBlocks, kBs, true);
  const BlockHash root = prefix_root_hash({"model"});
  std::mt19937 rng(4321 + static_cast<uint32_t>(policy.sinks * 31 + policy.window));
  struct Seq {
    std::vector<int32_t> tokens;
    int64_t computed = 0;
    SequenceKv kv;
    bool windowed = false;  // the window was applied since the last (re)start
  };
  std::map<int, Seq> live;
  std::vector<std::vector<int32_t>> content(kBlocks, std::vector<int32_t>(kBs, -1));  // token per slot
  int next_id = 0;
  int64_t hits = 0, preemptions = 0, dropped = 0, shared_drops = 0;
  std::vector<int> refs(kBlocks);
  auto check = [&] {
    std::fill(refs.begin(), refs.end(), 0);
    for (auto& [id, s] : live) {
      const SequenceKv& q = s.kv;
      for (size_t i = 0; i < q.blocks.size(); ++i) {
        const bool in_gap = q.n_dropped > 0 && i >= q.n_head_kept && i < q.n_head_kept + q.n_dropped;
        ASSERT_EQ(q.blocks[i] == kDroppedBlock, in_gap) << "entry " << i;
        if (!in_gap) ++refs[static_cast<size_t>(q.blocks[i])];
      }
      if (q.n_dropped > 0) {
        ASSERT_EQ(q.n_head_kept, head);
      }
      // The window: every block wholly between the sinks and the next query's window is gone.
      const int64_t first = policy.first_window_pos(s.computed);
      for (int64_t b = static_cast<int64_t>(head); s.windowed && (b + 1) * kBs <= first; ++b)
        ASSERT_EQ(q.blocks[static_cast<size_t>(b)], kDroppedBlock) << "block " << b << " outside the window";
      // What the sequence can still read holds its own tokens.
      for (int64_t p = 0; p < s.computed; ++p) {
        const BlockId b = q.blocks[static_cast<size_t>(p / kBs)];
        if (b == kDroppedBlock) continue;
        ASSERT_EQ(content[static_cast<size_t>(b)][static_cast<size_t>(p % kBs)],
                  s.tokens[static_cast<size_t>(p)])
            << "position " << p << " of a sequence reads a changed block";
      }
    }
    int used = 0;
    for (BlockId b = 0; b < kBlocks; ++b) {
      ASSERT_EQ(kv.pool().ref_count(b), refs[static_cast<size_t>(b)]) << b;
      used += refs[static_cast<size_t>(b)] > 0;
    }
    ASSERT_EQ(kv.pool().n_free() + used, kBlocks);
  };
  for (int step = 0; step < 100000; ++step) {
    int op = static_cast<int>(rng() % 10);
    if (live.size() >= 24 && (op < 3 || op == 7)) op = 8;  // keep the population bounded
    if (op < 3 || live.empty()) {  // arrival: a prompt from a small family of prefixes
      Seq s;
      const int family = static_cast<int>(rng() % 4);
      const int len = 1 + static_cast<int>(rng() % 30);
      for (int i = 0; i < len; ++i)
        s.tokens.push_back(i < 12 ? family * 100 + i : static_cast<int32_t>(rng() % 50));
      s.computed = kv.acquire_prefix(s.kv, s.tokens, static_cast<int32_t>(s.tokens.size()) - 1, root);
      hits += s.computed;
      live.emplace(next_id++, std::move(s));
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      Seq& s = it->second;
      if (op < 7) {  // compute a chunk (or one decode token), then apply the window
        if (s.computed == static_cast<int64_t>(s.tokens.size()))
          s.tokens.push_back(static_cast<int32_t>(rng() % 50));
        const int64_t n =
            std::min<int64_t>(static_cast<int64_t>(s.tokens.size()) - s.computed, 1 + rng() % 6);
        std::vector<BlockCopy> copies;
        if (kv.reserve(s.kv, s.computed + n, s.computed, copies)) {
          for (const BlockCopy& c : copies)
            content[static_cast<size_t>(c.dst)] = content[static_cast<size_t>(c.src)];
          for (int64_t p = s.computed; p < s.computed + n; ++p) {
            const BlockId b = s.kv.blocks[static_cast<size_t>(p / kBs)];
            ASSERT_EQ(kv.pool().ref_count(b), 1) << "a shared block is about to be written";
            content[static_cast<size_t>(b)][static_cast<size_t>(p % kBs)] = s.tokens[static_cast<size_t>(p)];
          }
          s.computed += n;
          kv.publish(s.kv, s.tokens, s.computed, root);
          const int64_t end =
              std::min<int64_t>(static_cast<int64_t>(s.kv.blocks.size()),
                                std::max<int64_t>(0, policy.first_window_pos(s.computed)) / kBs);
          for (int64_t b = static_cast<int64_t>(head + s.kv.n_dropped); b < end; ++b)
            shared_drops += kv.pool().ref_count(s.kv.blocks[static_cast<size_t>(b)]) > 1;
          dropped += kv.drop_between(s.kv, head, policy.first_window_pos(s.computed));
          s.windowed = true;
        } else {  // out of blocks: preempt this sequence (recompute later)
          kv.free(s.kv);
          s.computed = 0;
          s.windowed = false;
          ++preemptions;
        }
      } else if (op < 8 && !s.kv.blocks.empty()) {  // fork (parallel sampling)
        Seq child;
        child.tokens = s.tokens;
        child.computed = s.computed;
        child.windowed = s.windowed;
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
  EXPECT_GT(dropped, 0);
  EXPECT_GT(shared_drops, 0);  // the window did reach blocks another sequence or the cache shares
}

INSTANTIATE_TEST_SUITE_P(Policies, KvWindowInvariants,
                         ::testing::Values(Policy{0, 8}, Policy{1, 8}, Policy{4, 6}, Policy{6, 5}));

TEST(KvWindowPolicy, BadValuesAreCleanErrors) {
  EXPECT_THROW((KvWindowPolicy{4, 0}).validate(16), Error);    // sinks without a window
  EXPECT_THROW((KvWindowPolicy{0, 15}).validate(16), Error);   // smaller than a block
  EXPECT_THROW((KvWindowPolicy{-1, 64}).validate(16), Error);  // negative
  EXPECT_THROW((KvWindowPolicy{0, -5}).validate(16), Error);
  EXPECT_NO_THROW((KvWindowPolicy{0, 0}).validate(16));  // off
  EXPECT_NO_THROW((KvWindowPolicy{4, 16}).validate(16));
}

TEST(KvWindowPolicy, LayersWithANarrowerOwnWindowKeepIt) {
  const KvWindowPolicy p{4, 256};
  EXPECT_EQ(layer_window(p, 0).window, 256);
  EXPECT_EQ(layer_window(p, 0).sinks, 4);
  EXPECT_EQ(layer_window(p, 128).window, 128);
  EXPECT_EQ(layer_window(p, 128).sinks, 0);
  EXPECT_EQ(layer_window(p, 4096).window, 256);
  EXPECT_EQ(layer_window(KvWindowPolicy{}, 128).window, 128);  // off: the model's own
}

}  // namespace
}  // namespace strata
