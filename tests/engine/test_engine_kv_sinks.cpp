// The engine with StreamingLLM attention sinks + a window (EngineConfig::kv_window): a long
// generation far beyond the training context holds only the sink blocks and about one window;
// while no token has left the window the output is that of a full cache; bad settings are clean
// errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "common/direct_session.h"
#include "core/check.h"
#include "engine_test_util.h"
#include "model/synthetic_model.h"

namespace strata {
namespace {

using test::Collector;
using test::RequestResult;

struct SinkModel {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
};

// A llama-shaped random model with a training context of 128 tokens.
SinkModel& sink_model() {
  static SinkModel w = [] {
    const SynthPreset p{"sinks-test", "llama", 64, 2, 4, 2, 128, 320, 128, 10000.0f, 0};
    const std::string path =
        (std::filesystem::temp_directory_path() / ("strata-sinks-" + std::to_string(getpid()) + ".gguf"))
            .string();
    SynthOptions o;
    o.type = TensorType::F32;
    o.n_threads = 1;
    write_synthetic_model(p, o, path, {});
    SinkModel m;
    m.backend = make_cpu_backend(1);
    m.model = Model::load(path, *m.backend);
    std::filesystem::remove(path);
    return m;
  }();
  return w;
}

std::vector<int32_t> full_cache_greedy(Model& m, const std::vector<int32_t>& prompt, int n) {
  test::DirectSession s(m, static_cast<int64_t>(prompt.size()) + n);
  const int64_t n_vocab = m.config().n_vocab;
  std::vector<int32_t> out;
  std::vector<int32_t> next = prompt;
  for (int i = 0; i < n; ++i) {
    const std::vector<float>& logits = s.eval(next);
    const int32_t t =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.begin() + n_vocab) - logits.begin());
    out.push_back(t);
    next = {t};
  }
  return out;
}

RequestParams long_greedy(const Model& m, int n) {
  RequestParams p = test::greedy_params(m, "Once upon a time the sinks held the window", n);
  p.stop.ignore_eos = true;
  return p;
}

TEST(EngineKvSinks, GenerationFarBeyondTheContextHoldsTheSinksAndAboutOneWindow) {
  Model& m = *sink_model().model;
  ASSERT_EQ(m.config().n_ctx_train, 128);
  EngineConfig cfg;
  cfg.block_size = 16;
  cfg.kv_cache_bytes = 64u << 20;
  cfg.kv_window = {4, 40};
  Engine e(m, cfg);
  const int n = 600;  // ~5x the training context
  Collector col;
  RequestResult r;
  e.submit(long_greedy(m, n), col.callback(&r));
  int32_t peak = 0;
  while (!r.done) {
    e.step();
    peak = std::max(peak, e.stats().kv_blocks_used);
  }
  ASSERT_EQ(r.choices[0].tokens.size(), size_t(n));
  // One sink block, the window of 40 + this step's token straddling up to 4 blocks; without the
  // window ~610 tokens would hold 39.
  EXPECT_LE(peak, 1 + (40 + 1 + 2 * cfg.block_size - 2) / cfg.block_size + 1);
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
}

TEST(EngineKvSinks, MatchesTheFullCacheUntilTokensLeaveTheWindow) {
  // Positions up to sinks + window - 1 see every earlier token (in two passes: sinks below the
  // window, then the window), so greedy decoding follows the full cache's.
  Model& m = *sink_model().model;
  EngineConfig cfg;
  cfg.block_size = 16;
  cfg.kv_cache_bytes = 64u << 20;
  cfg.kv_window = {4, 48};
  Engine e(m, cfg);
  RequestParams p = test::greedy_params(m, "Once", 1);
  p.stop.ignore_eos = true;
  const int n = 4 + 48 - static_cast<int>(p.prompt.size());
  ASSERT_GE(n, 40);  // most positions past the window's start read the sinks in their own pass
  p.stop.max_tokens = n;
  Collector col;
  RequestResult r;
  e.submit(p, col.callback(&r));
  e.run_until_idle();
  ASSERT_TRUE(r.done);
  ASSERT_EQ(r.choices[0].tokens.size(), size_t(n));
  EXPECT_EQ(r.choices[0].tokens, full_cache_greedy(m, p.prompt, n));
}

TEST(EngineKvSinks, PrefixHitsOutsideTheWindowAreGivenBackAndTheOutputIsUnchanged) {
  Model& m = *sink_model().model;
  EngineConfig cfg;
  cfg.block_size = 16;
  cfg.kv_cache_bytes = 64u << 20;
  cfg.max_batched_tokens = 64;  // the prompt is prefilled in several chunks
  cfg.kv_window = {4, 40};
  Engine e(m, cfg);
  std::string text;
  for (int i = 0; i < 40; ++i) text += "the little window saw sink number " + std::to_string(i) + ". ";
  RequestParams p = test::greedy_params(m, text, 30);
  p.stop.ignore_eos = true;
  ASSERT_GT(p.prompt.size(), size_t(200));
  std::vector<RequestResult> r(2);
  for (RequestResult& ri : r) {
    Collector col;
    e.submit(p, col.callback(&ri));
    int32_t peak = 0;
    while (!ri.done) {
      e.step();
      peak = std::max(peak, e.stats().kv_blocks_used);
    }
    EXPECT_LE(peak, 1 + (40 + 64 + 2 * cfg.block_size) / cfg.block_size + 1);
  }
  EXPECT_GT(r[1].usage.cached_prompt_tokens, 0);  // the second run started from prefix-cache hits
  EXPECT_EQ(r[1].choices[0].tokens, r[0].choices[0].tokens);
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
}

TEST(EngineKvSinks, BadSettingsAreCleanErrors) {
  Model& m = *sink_model().model;
  EngineConfig cfg;
  cfg.kv_cache_bytes = 8u << 20;
  cfg.kv_window = {4, 0};  // sinks without a window
  EXPECT_THROW(Engine(m, cfg), Error);
  cfg.kv_window = {0, 8};  // smaller than a block of 16
  EXPECT_THROW(Engine(m, cfg), Error);
  cfg.kv_window = {4, 64};
  cfg.spec = SpecConfig{};
  cfg.spec.methods.push_back(DraftMethodSpec{DraftMethod::SelfQuant, "q4_0"});
  EXPECT_THROW(Engine(m, cfg), Error);  // model drafters would read the dropped blocks
}

}  // namespace
}  // namespace strata
