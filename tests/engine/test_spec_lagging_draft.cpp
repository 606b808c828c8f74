// A model drafter with its own KV cache (draft:FILE) lets its K/V lag while a sequence does not
// draft with it, and catches up in one batched chunk when it drafts again; a self-draft
// (self:TYPE) runs over the target's own K/V and never lags. References: a draft that caught up
// proposes exactly what a draft that never saw the sequence proposes after prefilling it; greedy
// output stays that of plain decoding while the draft lags (a cheap drafter earlier in the chain
// proposes, or the scheduler drops drafts), under preemption, and around aborts.
#include <gtest/gtest.h>

#include <numeric>

#include "engine/offline.h"
#include "engine/spec/model_drafter.h"
#include "engine_test_util.h"

namespace strata {
namespace {

using test::Collector;
using test::RequestResult;

std::string synth_tiny() {
  return test::shared_path("models/synth-tiny/synth-tiny-q8_0.gguf");
}

// Text whose continuation repeats spans of it: the n-gram drafter proposes some steps and not
// others, so a model drafter later in the chain lags, then catches up.
const char* kCopyHeavy =
    "Once upon a time, there was a little girl named Lily. She liked to play outside. "
    "Once upon a time, there was a little girl named Lily. She liked to";

EngineConfig lagging_config(const std::string& methods, int64_t kv_tokens = 4096) {
  EngineConfig c;
  c.kv_cache_tokens = kv_tokens;
  c.max_num_seqs = 64;
  if (!methods.empty()) c.spec.methods = parse_spec_methods(methods);
  c.spec.draft_max = 4;
  c.spec.draft_p_min = 0.0f;
  c.spec.adaptive = false;
  return c;
}

RequestParams greedy(const Model& m, const std::string& prompt, int n) {
  RequestParams p = test::greedy_params(m, prompt, n);
  p.stop.ignore_eos = true;
  return p;
}

std::vector<int32_t> plain_output(Model& m, const std::string& prompt, int n) {
  Engine e(m, lagging_config(""));
  return offline::generate(e, greedy(m, prompt, n)).tokens;
}

// Drives a ModelDrafter directly, one greedy slot at a time.
struct DirectDrafter {
  Model& target;
  KvCacheType kv_type = EngineConfig{}.kv_type;
  ModelDrafter drafter{parse_spec_methods("draft:" + synth_tiny())[0], target, 16, kv_type};
  KvStorage target_kv{target.backend(), target.kv_geometry(kv_type, 16), 1};  // not used by draft:FILE
  Sampler sampler{SamplingParams{.temperature = 0.0f}, static_cast<int32_t>(target.config().n_vocab)};

  explicit DirectDrafter(Model& t) : target(t) { drafter.allocate_kv(64, target_kv); }

  // Sequence `id` owns blocks [16 * id, 16 * id + 16).
  std::vector<int32_t> draft(uint64_t id, const std::vector<int32_t>& tokens) {
    std::vector<BlockId> blocks(16);
    std::iota(blocks.begin(), blocks.end(), static_cast<BlockId>(16 * id));
    DraftSlot s;
    s.seq_id = id;
    s.tokens = &tokens;
    s.n_prompt = static_cast<int64_t>(tokens.size());
    s.blocks = &blocks;
    s.sampler = &sampler;
    s.max_draft = 4;
    DraftSlot* p = &s;
    drafter.draft({&p, 1});
    return s.draft;
  }
};

TEST(LaggingDraft, CatchUpProposesWhatAFreshDraftProposes) {
  Model& m = *test::stories().model;
  std::vector<int32_t> text = m.tokenizer().encode(kCopyHeavy, true, false);
  const std::vector<int32_t> gen = plain_output(m, kCopyHeavy, 48);
  text.insert(text.end(), gen.begin(), gen.end());
  ASSERT_GT(text.size(), 80u);
  auto prefix = [&](size_t n) {
    return std::vector<int32_t>(text.begin(), text.begin() + static_cast<long>(n));
  };

  DirectDrafter d(m);
  ASSERT_FALSE(d.drafter.shares_target_kv());
  EXPECT_EQ(d.drafter.lag(0, prefix(10)), 9);  // never seen: all but the last token are missing
  ASSERT_FALSE(d.draft(0, prefix(10)).empty());
  EXPECT_EQ(d.drafter.lag(0, prefix(10)), 0);
  // 40 accepted tokens later, without drafting: the draft K/V holds the first 10 tokens plus the
  // drafts it fed (up to 3), which may or may not match what was accepted.
  const int64_t lag = d.drafter.lag(0, prefix(50));
  EXPECT_GE(lag, 49 - 13);
  EXPECT_LE(lag, 49 - 10);
  const std::vector<int32_t> caught_up = d.draft(0, prefix(50));
  EXPECT_EQ(d.drafter.lag(0, prefix(50)), 0);
  EXPECT_EQ(caught_up, d.draft(1, prefix(50)));  // sequence 1: prefilled from scratch
  EXPECT_FALSE(caught_up.empty());
  // A sequence that diverges from what the draft fed (a rejected continuation) is valid only up
  // to the divergence.
  std::vector<int32_t> other = prefix(30);
  other.push_back(text[30] == 5 ? 6 : 5);
  other.push_back(text[31]);
  EXPECT_EQ(d.drafter.lag(0, other), static_cast<int64_t>(other.size()) - 1 - 30);
  EXPECT_EQ(d.draft(0, other), d.draft(2, other));
  // Released (finished, aborted, preempted): nothing of it is trusted again.
  d.drafter.release(0);
  EXPECT_EQ(d.drafter.lag(0, prefix(50)), 49);
}

TEST(LaggingDraft, SelfDraftRunsOverTheTargetsKvAndNeverLags) {
  Model& m = *test::stories().model;
  const KvCacheType kv_type = EngineConfig{}.kv_type;
  ModelDrafter d(parse_spec_methods("self:q4_0")[0], m, 16, kv_type);
  EXPECT_TRUE(d.shares_target_kv());
  EXPECT_EQ(d.kv_bytes_per_block(), 0u);
  const std::vector<int32_t> t = m.tokenizer().encode(kCopyHeavy, true, false);
  EXPECT_EQ(d.lag(7, t), 0);
  // The pool holds only the target's K/V: as many blocks as without speculation.
  EngineConfig with = lagging_config("self:q4_0"), without = lagging_config("");
  with.kv_cache_tokens = without.kv_cache_tokens = 0;
  with.kv_cache_bytes = without.kv_cache_bytes = size_t{1} << 20;
  EXPECT_EQ(Engine(m, with).stats().kv_blocks_total, Engine(m, without).stats().kv_blocks_total);
  // A separate draft model's K/V takes its share of the same memory.
  EngineConfig own = lagging_config("draft:" + synth_tiny());
  own.kv_cache_tokens = 0;
  own.kv_cache_bytes = size_t{1} << 20;
  EXPECT_LT(Engine(m, own).stats().kv_blocks_total, Engine(m, without).stats().kv_blocks_total);
}

TEST(LaggingDraft, GreedyOutputStaysPlainWhileTheDraftLagsAndCatchesUp) {
  Model& m = *test::stories().model;
  const std::vector<int32_t> plain = plain_output(m, kCopyHeavy, 64);
  Engine e(m, lagging_config("ngram,draft:" + synth_tiny()));
  const offline::Output o = offline::generate(e, greedy(m, kCopyHeavy, 64));
  EXPECT_EQ(o.tokens, plain);
  EXPECT_GT(o.usage.draft_tokens, 0);
  // More catch-up than the prompt: the draft lagged behind tokens emitted while n-gram drafted.
  const auto n_prompt = static_cast<double>(m.tokenizer().encode(kCopyHeavy, true, false).size());
  EXPECT_GT(e.metrics().spec_draft_catch_up_tokens.value(), n_prompt - 1);
  // The self-draft over the target's K/V has nothing to catch up.
  Engine self(m, lagging_config("ngram,self:q4_0"));
  EXPECT_EQ(offline::generate(self, greedy(m, kCopyHeavy, 64)).tokens, plain);
  EXPECT_EQ(self.metrics().spec_draft_catch_up_tokens.value(), 0.0);
}

// Many lagging sequences in a pool that cannot hold them: preempted sequences lose their draft
// K/V with their blocks and start over; everything else stays exact.
TEST(LaggingDraft, PreemptionWhileLaggingKeepsOutputsExact) {
  Model& m = *test::stories().model;
  std::vector<std::string> prompts;
  std::vector<std::vector<int32_t>> solo;
  for (int i = 0; i < 12; ++i) {
    prompts.push_back(i % 2 ? kCopyHeavy
                            : std::string("The little dog") + std::string(static_cast<size_t>(i), ' '));
    solo.push_back(plain_output(m, prompts.back(), 40));
  }
  for (bool caching : {true, false}) {
    EngineConfig cfg = lagging_config("ngram,draft:" + synth_tiny(), 16 * 20);
    cfg.prefix_caching = caching;
    Engine e(m, cfg);
    Collector col;
    std::vector<RequestResult> results(prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i)
      e.submit(greedy(m, prompts[i], 40), col.callback(&results[i]));
    e.run_until_idle();
    EXPECT_GT(e.stats().preemptions, 0);
    for (size_t i = 0; i < prompts.size(); ++i) {
      ASSERT_TRUE(results[i].done);
      EXPECT_EQ(results[i].choices[0].tokens, solo[i]) << "request " << i << ", caching " << caching;
    }
    EXPECT_EQ(e.stats().kv_blocks_used, 0);
  }
}

// Requests aborted while their draft K/V lags: their blocks go back, the drafter forgets them,
// and the requests around them (and after them, in the freed blocks) stay exact.
TEST(LaggingDraft, AbortWhileLaggingLeavesOtherRequestsExact) {
  Model& m = *test::stories().model;
  const std::vector<int32_t> plain = plain_output(m, kCopyHeavy, 40);
  Engine e(m, lagging_config("ngram,draft:" + synth_tiny(), 16 * 40));
  Collector col;
  std::vector<RequestResult> results(6);
  std::vector<RequestId> ids;
  for (auto& r : results) ids.push_back(e.submit(greedy(m, kCopyHeavy, 40), col.callback(&r)).id);
  // Until every request has emitted some tokens (drafted, lagged behind n-gram drafts).
  for (int step = 0; step < 200; ++step) {
    bool all = true;
    for (auto& r : results) all = all && !r.choices[0].tokens.empty() && r.choices[0].tokens.size() >= 8;
    if (all) break;
    ASSERT_TRUE(e.step());
  }
  for (size_t i = 0; i < results.size(); i += 2) e.abort(ids[i]);
  e.run_until_idle();
  for (size_t i = 0; i < results.size(); ++i) {
    ASSERT_TRUE(results[i].done) << i;
    if (i % 2 == 0) {
      EXPECT_EQ(results[i].choices[0].finish, FinishReason::Abort) << i;
      EXPECT_LT(results[i].choices[0].tokens.size(), plain.size()) << i;
    } else {
      EXPECT_EQ(results[i].choices[0].tokens, plain) << i;
    }
  }
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
  RequestResult after;
  e.submit(greedy(m, kCopyHeavy, 40), col.callback(&after));
  e.run_until_idle();
  EXPECT_EQ(after.choices[0].tokens, plain);
}

}  // namespace
}  // namespace strata
