// The engine with score-based KV eviction (EngineConfig::kv_evict; SnapKV unless named): a budget that covers
// the prompt changes nothing; a smaller one gives back the prompt's evicted blocks, leaves the
// prefix cache's blocks intact (a second request with the same prompt still hits them and, with
// eviction off, produces the no-eviction output), decodes deterministically, and combinations it
// cannot run are clean errors. H2O keeps a generation within budget + window + a block and
// copies blocks forked choices share; recent gives back the prompt before its last tokens.
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

// H2O goes on during generation: the prompt is compacted to budget + window tokens, then every
// block_size generated tokens again, so the sequence never holds more than budget + window +
// block_size tokens (ceil of that / 16 blocks), and the tokens given back add up.
TEST(EngineKvEvict, H2OKeepsAGenerationWithinBudgetWindowAndABlock) {
  Model& m = *test::stories().model;
  const int32_t n_gen = 120;
  RequestParams p = test::greedy_params(m, kLongPrompt, n_gen);
  p.stop.ignore_eos = true;
  const int64_t n = int64_t(p.prompt.size());
  const KvEvictPolicy ep{24, 16, 7, KvEvictMethod::H2O};
  Engine e(m, config(ep));
  Collector col;
  RequestResult r;
  e.submit(p, col.callback(&r));
  int32_t most_after = 0;
  int64_t n_evictions = 0, last = 0;
  while (!r.done && e.step()) {
    const EngineStats st = e.stats();
    if (st.kv_evicted_tokens > 0) most_after = std::max(most_after, st.kv_blocks_used);
    n_evictions += st.kv_evicted_tokens != last;
    last = st.kv_evicted_tokens;
  }
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.choices[0].tokens.size(), size_t(n_gen));
  // n_gen - 1 generated tokens are computed (the last is only sampled); one compaction per 16.
  const int64_t n_blocks_of_generation = (n_gen - 1) / 16;
  EXPECT_EQ(n_evictions, 1 + n_blocks_of_generation);
  EXPECT_EQ(e.stats().kv_evicted_tokens, n - ep.budget - ep.window + 16 * n_blocks_of_generation);
  EXPECT_EQ(most_after, (ep.budget + ep.window + 16 + 15) / 16);
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
  // Deterministic, and unlike the prompt-only policies after the first block of generation.
  Engine e2(m, config(ep));
  EXPECT_EQ(run_one(e2, p), r.choices[0].tokens);
}

// Forked choices share the compacted blocks; each one's later compactions must copy them, not
// write them: greedy choices stay identical to the single-choice run, and no block leaks.
TEST(EngineKvEvict, H2OForkedChoicesCompactSharedBlocksByCopying) {
  Model& m = *test::stories().model;
  RequestParams p = test::greedy_params(m, kLongPrompt, 60);
  p.stop.ignore_eos = true;
  const KvEvictPolicy ep{24, 16, 7, KvEvictMethod::H2O};
  Engine one(m, config(ep));
  const auto want = run_one(one, p);
  p.n = 3;
  Engine e(m, config(ep));
  Collector col;
  RequestResult r;
  e.submit(p, col.callback(&r));
  while (!r.done && e.step()) {
  }
  ASSERT_TRUE(r.done);
  ASSERT_EQ(r.choices.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r.choices[i].tokens, want) << "choice " << i;
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
}

TEST(EngineKvEvict, RecentGivesBackThePromptBeforeItsLastTokens) {
  Model& m = *test::stories().model;
  RequestParams p = test::greedy_params(m, kLongPrompt, 40);
  p.stop.ignore_eos = true;
  const int64_t n = int64_t(p.prompt.size());
  const KvEvictPolicy ep{24, 16, 7, KvEvictMethod::Recent};
  Engine e(m, config(ep));
  const auto got = run_one(e, p);
  EXPECT_EQ(got.size(), 40u);
  EXPECT_EQ(e.stats().kv_evicted_tokens, n - ep.budget - ep.window);  // the prompt only
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
  // h2o evicts during generation, which speculative decoding's rollback cannot follow.
  EngineConfig spec = config({24, 16, 7, KvEvictMethod::H2O});
  spec.spec.methods = {DraftMethodSpec{DraftMethod::Ngram}};
  EXPECT_THROW(Engine(m, spec), Error);
  Engine h2o(m, config({24, 16, 7, KvEvictMethod::H2O}));
  RequestParams p = test::greedy_params(m, kLongPrompt, 8);
  p.speculative = SpecOverride{};
  p.speculative->methods = std::vector<DraftMethodSpec>{DraftMethodSpec{DraftMethod::Ngram}};
  EXPECT_THROW(h2o.submit(p, [](const EngineEvent&) {}), Error);
}

}  // namespace
}  // namespace strata
