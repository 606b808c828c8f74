// The engine with score-based KV eviction (EngineConfig::kv_evict, SnapKV): a budget that covers
// the prompt changes nothing; a smaller one gives back the prompt's evicted blocks, leaves the
// prefix cache's blocks intact (a second request with the same prompt still hits them and, with
// eviction off, produces the no-eviction output), decodes deterministically, and combinations it
// cannot run are clean errors.
#include <gtest/gtest.h>

#include "core/check.h"
#include "engine_test_util.h"

namespace strata {
namespace {

using test::Collector;
using test::RequestResult;

const char* kLongPrompt =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her "
    "friends. One day, she saw a big red ball under a tree. She ran to get it, but a dog took it first. "
    "Lily was sad, but her mom said they could share. The dog and Lily played with the ball all day long. "
    "When the sun went down, they went home happy and tired.";

std::vector<int32_t> run_one(Engine& e, const RequestParams& p) {
  Collector col;
  RequestResult r;
  e.submit(p, col.callback(&r));
  while (!r.done && e.step()) {
  }
  EXPECT_TRUE(r.done);
  return r.choices[0].tokens;
}

EngineConfig config(KvEvictPolicy ep, bool prefix_caching = false) {
  EngineConfig cfg;
  cfg.block_size = 16;
  cfg.kv_cache_tokens = 4096;
  cfg.max_batched_tokens = 64;  // the prompt runs in several chunks, the window across two
  cfg.prefix_caching = prefix_caching;
  cfg.kv_evict = ep;
  return cfg;
}

TEST(EngineKvEvict, ABudgetCoveringThePromptChangesNothing) {
  Model& m = *test::stories().model;
  RequestParams p = test::greedy_params(m, kLongPrompt, 24);
  p.stop.ignore_eos = true;
  const int64_t n = int64_t(p.prompt.size());
  ASSERT_GT(n, 80);
  Engine plain(m, config({}));
  const auto want = run_one(plain, p);
  Engine same(m, config({int32_t(n - 32), 32, 7}));  // budget + window == prompt: nothing to evict
  EXPECT_EQ(run_one(same, p), want);
  EXPECT_EQ(same.stats().kv_evicted_tokens, 0);
}

TEST(EngineKvEvict, ASmallBudgetFreesThePromptBlocksAndDecodes) {
  Model& m = *test::stories().model;
  RequestParams p = test::greedy_params(m, kLongPrompt, 40);
  p.stop.ignore_eos = true;
  const int64_t n = int64_t(p.prompt.size());
  const KvEvictPolicy ep{24, 16, 7};
  Engine e(m, config(ep));
  Collector col;
  RequestResult r;
  e.submit(p, col.callback(&r));
  int32_t used_before = 0, used_after = -1;
  while (!r.done && e.step()) {
    const EngineStats st = e.stats();
    if (st.kv_evicted_tokens == 0) used_before = std::max(used_before, st.kv_blocks_used);
    if (st.kv_evicted_tokens > 0 && used_after < 0) used_after = st.kv_blocks_used;
  }
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.choices[0].tokens.size(), 40u);
  EXPECT_EQ(e.stats().kv_evicted_tokens, n - ep.window - ep.budget);
  // After eviction the sequence holds ceil((budget + window + 1) / 16) blocks.
  EXPECT_EQ(used_after, (ep.budget + ep.window + 1 + 15) / 16);
  // Before: the prompt up to its last chunk (64 tokens, the one that evicts).
  EXPECT_GE(used_before, int32_t((n - 64) / 16));
  EXPECT_LT(used_after, used_before);
  // Deterministic: the same request again gives the same tokens.
  Engine e2(m, config(ep));
  EXPECT_EQ(run_one(e2, p), r.choices[0].tokens);
}

TEST(EngineKvEvict, PrefixCacheBlocksSurviveAnEvictingSequence) {
  Model& m = *test::stories().model;
  RequestParams p = test::greedy_params(m, kLongPrompt, 16);
  p.stop.ignore_eos = true;
  Engine plain(m, config({}, true));
  const auto want = run_one(plain, p);
  // One engine: an evicting request, then the same prompt from the prefix cache with a budget so
  // large that nothing is evicted: the cached blocks must still hold the full prompt's K/V.
  Engine e(m, config({24, 16, 7}, true));
  run_one(e, p);
  EXPECT_GT(e.stats().kv_evicted_tokens, 0);
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
  RequestParams q = p;
  q.kv_evict_at = 40;  // too short to evict: 40 <= 24 + 16
  const auto got = run_one(e, q);
  EXPECT_GT(e.stats().prefix_hits, 0);
  EXPECT_EQ(got, want);
}

TEST(EngineKvEvict, ParallelSamplingSharesTheCompactedBlocks) {
  Model& m = *test::stories().model;
  RequestParams p = test::greedy_params(m, kLongPrompt, 12);
  p.stop.ignore_eos = true;
  p.n = 3;
  Engine e(m, config({24, 16, 7}));
  Collector col;
  RequestResult r;
  e.submit(p, col.callback(&r));
  while (!r.done && e.step()) {
  }
  ASSERT_TRUE(r.done);
  ASSERT_EQ(r.choices.size(), 3u);
  for (int i = 1; i < 3; ++i) EXPECT_EQ(r.choices[i].tokens, r.choices[0].tokens);  // greedy
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
}

TEST(EngineKvEvict, CombinationsItCannotRunAreErrors) {
  Model& m = *test::stories().model;
  EngineConfig w = config({24, 16, 7});
  w.kv_window = {0, 64};
  EXPECT_THROW(Engine(m, w), Error);
  EngineConfig kivi = config({24, 16, 7});
  kivi.kv_type.k = KvType::KIVI4;
  EXPECT_THROW(Engine(m, kivi), Error);
  EXPECT_THROW(Engine(m, config({24, 0, 7})), Error);
}

}  // namespace
}  // namespace strata
