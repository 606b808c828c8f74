// A greedy request gives the same tokens alone, in a batch of 32 at any position, with prefix
// caching on or off, and with any prefill chunk size (the engine's determinism guarantee).
#include <gtest/gtest.h>

#include "engine_test_util.h"

namespace strata {
namespace {

using test::Collector;
using test::RequestResult;

const std::vector<std::string> kPrompts = {
    "Once upon a time",
    "The little dog",
    "Lily and Ben went to the park. They",
    "One day, a big bird flew",
    "Tom had a red ball. He",
    "The sun was shining and",
    "She said, \"I want to play",
    "Mom made a cake",
};

std::string prompt_for(int i) {
  // 32 distinct prompts of varied lengths, sharing prefixes (so prefix caching has hits).
  std::string p = kPrompts[static_cast<size_t>(i) % kPrompts.size()];
  for (int k = 0; k < i / 8; ++k) p += " and then they played";
  return p;
}

std::vector<std::vector<int32_t>> run_all(const std::vector<int>& which, EngineConfig cfg, int max_tokens) {
  Model& m = *test::stories().model;
  Engine engine(m, cfg);
  Collector col;
  std::vector<RequestResult> results(which.size());
  for (size_t i = 0; i < which.size(); ++i)
    engine.submit(test::greedy_params(m, prompt_for(which[i]), max_tokens), col.callback(&results[i]));
  engine.run_until_idle();
  std::vector<std::vector<int32_t>> out;
  for (auto& r : results) {
    EXPECT_TRUE(r.done);
    out.push_back(r.choices[0].tokens);
  }
  return out;
}

EngineConfig base_config() {
  EngineConfig c;
  c.kv_cache_bytes = 64 << 20;
  c.max_num_seqs = 64;
  return c;
}

TEST(EngineDeterminism, AloneEqualsBatchOf32AtAnyPositionAnyChunkingAnyCaching) {
  constexpr int kTokens = 48;
  std::vector<std::vector<int32_t>> solo;
  for (int i = 0; i < 32; ++i) solo.push_back(run_all({i}, base_config(), kTokens)[0]);

  std::vector<int> order(32);
  for (int i = 0; i < 32; ++i) order[static_cast<size_t>(i)] = (i * 13 + 5) % 32;  // shuffled positions
  for (bool caching : {true, false}) {
    for (int32_t chunk : {512, 16, 7}) {
      EngineConfig cfg = base_config();
      cfg.prefix_caching = caching;
      cfg.max_batched_tokens = chunk;
      const auto batched = run_all(order, cfg, kTokens);
      for (size_t k = 0; k < order.size(); ++k)
        EXPECT_EQ(batched[k], solo[static_cast<size_t>(order[k])])
            << "prompt " << order[k] << " at position " << k << ", caching " << caching << ", chunk " << chunk;
    }
  }
}

TEST(EngineDeterminism, MatchesDirectGreedyDecoding) {
  // The engine's greedy tokens equal a plain argmax loop over the model (no scheduler).
  Model& m = *test::stories().model;
  const auto engine_tokens = run_all({2}, base_config(), 32)[0];
  std::vector<int32_t> ids = m.tokenizer().encode(prompt_for(2), true, false);
  test::DirectSession session(m, 256);
  const std::vector<float>* logits = &session.eval(ids);
  std::vector<int32_t> direct;
  for (int i = 0; i < 32; ++i) {
    const float* l = logits->data();
    const int32_t t = static_cast<int32_t>(std::max_element(l, l + m.config().n_vocab) - l);
    direct.push_back(t);
    if (m.tokenizer().is_eog(t)) break;
    logits = &session.eval({t});
  }
  EXPECT_EQ(engine_tokens, direct);
}

}  // namespace
}  // namespace strata
