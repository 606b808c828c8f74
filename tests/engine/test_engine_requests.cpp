// Engine behaviour: preemption under KV pressure, prefix caching, parallel sampling with
// copy-on-write, aborts, stop strings, admission checks.
#include <gtest/gtest.h>

#include "core/check.h"
#include "engine_test_util.h"

namespace strata {
namespace {

using test::Collector;
using test::RequestResult;

std::vector<int32_t> solo_tokens(const std::string& prompt, int max_tokens) {
  Model& m = *test::stories().model;
  EngineConfig cfg;
  cfg.kv_cache_bytes = 16 << 20;
  Engine e(m, cfg);
  Collector col;
  RequestResult r;
  e.submit(test::greedy_params(m, prompt, max_tokens), col.callback(&r));
  e.run_until_idle();
  return r.choices[0].tokens;
}

TEST(EngineRequests, OversubscribedPoolPreemptsAndEveryOutputEqualsItsSoloRun) {
  Model& m = *test::stories().model;
  EngineConfig cfg;
  cfg.block_size = 16;
  // 16 requests x (~10 prompt + 64 output) tokens need ~80 blocks; give 24.
  cfg.kv_cache_bytes = 24 * m.kv_geometry(cfg.kv_type, 16).bytes_per_block();
  Engine e(m, cfg);
  ASSERT_EQ(e.stats().kv_blocks_total, 24);
  Collector col;
  std::vector<RequestResult> results(16);
  std::vector<std::string> prompts;
  for (int i = 0; i < 16; ++i) {
    prompts.push_back(std::string(i % 2 ? "The little dog" : "Once upon a time") + std::string(static_cast<size_t>(i % 5), '!'));
    e.submit(test::greedy_params(m, prompts.back(), 64), col.callback(&results[static_cast<size_t>(i)]));
  }
  e.run_until_idle();
  EXPECT_GT(e.stats().preemptions, 0);
  for (int i = 0; i < 16; ++i) {
    ASSERT_TRUE(results[static_cast<size_t>(i)].done);
    EXPECT_EQ(results[static_cast<size_t>(i)].choices[0].tokens, solo_tokens(prompts[static_cast<size_t>(i)], 64)) << i;
  }
  const EngineStats s = e.stats();
  EXPECT_EQ(s.kv_blocks_used, 0);  // everything given back
  EXPECT_EQ(s.running + s.waiting, 0);
}

TEST(EngineRequests, PrefixCacheHitsForSharedPromptsButNotAcrossSalts) {
  Model& m = *test::stories().model;
  EngineConfig cfg;
  cfg.kv_cache_bytes = 16 << 20;
  Engine e(m, cfg);
  std::string shared = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park.";
  Collector col;
  RequestResult a, b, c;
  auto pa = test::greedy_params(m, shared + " One day", 8);
  e.submit(pa, col.callback(&a));
  e.run_until_idle();
  EXPECT_EQ(a.usage.cached_prompt_tokens, 0);
  auto pb = test::greedy_params(m, shared + " The end", 8);
  e.submit(pb, col.callback(&b));
  e.run_until_idle();
  // The shared prefix is at least one full 16-token block.
  EXPECT_GE(b.usage.cached_prompt_tokens, 16);
  EXPECT_EQ(b.usage.cached_prompt_tokens % 16, 0);
  EXPECT_GT(e.stats().prefix_hits, 0);
  auto pc = pb;
  pc.cache_salt = "tenant-2";
  e.submit(pc, col.callback(&c));
  e.run_until_idle();
  EXPECT_EQ(c.usage.cached_prompt_tokens, 0);
  EXPECT_EQ(c.choices[0].tokens, b.choices[0].tokens);  // same answer, no sharing
}

TEST(EngineRequests, ParallelSamplingSharesThePromptAndCopiesOnWrite) {
  Model& m = *test::stories().model;
  EngineConfig cfg;
  cfg.kv_cache_bytes = 16 << 20;
  Engine e(m, cfg);
  Collector col;
  // Greedy n=3: the choices must all equal the solo greedy run even though they start from
  // shared blocks (a copy-on-write bug would corrupt one of them).
  RequestResult greedy;
  auto p = test::greedy_params(m, "Lily and Ben went to the park. They", 40);
  p.n = 3;
  e.submit(p, col.callback(&greedy));
  e.run_until_idle();
  ASSERT_TRUE(greedy.done);
  ASSERT_EQ(greedy.choices.size(), 3u);
  const auto solo = solo_tokens("Lily and Ben went to the park. They", 40);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(greedy.choices[i].tokens, solo) << i;
  EXPECT_EQ(greedy.usage.completion_tokens, 3 * static_cast<int64_t>(solo.size()));

  // Sampled n=4 with a seed: reproducible, and the choices differ from each other.
  auto sampled = [&] {
    RequestResult r;
    auto q = p;
    q.n = 4;
    q.sampling.temperature = 1.0f;
    q.sampling.seed = 99;
    e.submit(q, col.callback(&r));
    e.run_until_idle();
    return r;
  };
  const RequestResult r1 = sampled(), r2 = sampled();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r1.choices.at(i).tokens, r2.choices.at(i).tokens);
  EXPECT_NE(r1.choices.at(0).tokens, r1.choices.at(1).tokens);
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
}

TEST(EngineRequests, AbortFreesBlocksAndFinishesWithAbort) {
  Model& m = *test::stories().model;
  EngineConfig cfg;
  cfg.kv_cache_bytes = 16 << 20;
  Engine e(m, cfg);
  Collector col;
  RequestResult r, other;
  const auto id = e.submit(test::greedy_params(m, "Once upon a time", 200), col.callback(&r)).id;
  e.submit(test::greedy_params(m, "The little dog", 20), col.callback(&other));
  for (int i = 0; i < 5; ++i) e.step();
  EXPECT_GT(e.stats().kv_blocks_used, 0);
  e.abort(id);
  e.step();
  EXPECT_TRUE(r.done);
  EXPECT_EQ(r.choices[0].finish, FinishReason::Abort);
  e.run_until_idle();
  EXPECT_EQ(other.choices[0].tokens, solo_tokens("The little dog", 20));
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
}

TEST(EngineRequests, StopStringsMatchAcrossTokensAndAreNotEmitted) {
  Model& m = *test::stories().model;
  EngineConfig cfg;
  cfg.kv_cache_bytes = 16 << 20;
  Engine e(m, cfg);
  Collector col;
  RequestResult full, stopped;
  e.submit(test::greedy_params(m, "Once upon a time", 40), col.callback(&full));
  e.run_until_idle();
  const std::string text = full.choices[0].text;
  // Stop on a string spanning several tokens in the middle of the greedy text.
  const size_t at = text.find("little girl");
  ASSERT_NE(at, std::string::npos) << text;
  auto p = test::greedy_params(m, "Once upon a time", 40);
  p.stop.stop_strings = {"tle gi"};
  e.submit(p, col.callback(&stopped));
  e.run_until_idle();
  EXPECT_EQ(stopped.choices[0].finish, FinishReason::Stop);
  EXPECT_EQ(stopped.choices[0].text, text.substr(0, at + 3));
}

TEST(EngineRequests, MaxTokensGivesLengthAndUsageCounts) {
  Model& m = *test::stories().model;
  EngineConfig cfg;
  cfg.kv_cache_bytes = 16 << 20;
  Engine e(m, cfg);
  Collector col;
  RequestResult r;
  auto p = test::greedy_params(m, "Once upon a time", 5);
  e.submit(p, col.callback(&r));
  e.run_until_idle();
  EXPECT_EQ(r.choices[0].finish, FinishReason::Length);
  EXPECT_EQ(r.choices[0].tokens.size(), 5u);
  EXPECT_EQ(r.usage.completion_tokens, 5);
  EXPECT_EQ(r.usage.prompt_tokens, static_cast<int64_t>(p.prompt.size()));
}

TEST(EngineRequests, AdmissionRejectsWhatCanNeverFit) {
  Model& m = *test::stories().model;
  EngineConfig cfg;
  cfg.kv_cache_bytes = 4 * m.kv_geometry(cfg.kv_type, 16).bytes_per_block();  // 64 tokens
  cfg.max_queue = 2;
  Engine e(m, cfg);
  Collector col;
  RequestResult r;
  EXPECT_THROW(e.submit(test::greedy_params(m, "Once upon a time", 100), col.callback(&r)), Error);
  auto empty = test::greedy_params(m, "x", 1);
  empty.prompt.clear();
  EXPECT_THROW(e.submit(empty, col.callback(&r)), Error);
  auto bad = test::greedy_params(m, "x", 1);
  bad.prompt = {100000};
  EXPECT_THROW(e.submit(bad, col.callback(&r)), Error);
  // Queue limit: the third waiting request is refused.
  RequestResult q1, q2, q3;
  EXPECT_EQ(e.submit(test::greedy_params(m, "a", 4), col.callback(&q1)).status, SubmitStatus::Accepted);
  EXPECT_EQ(e.submit(test::greedy_params(m, "b", 4), col.callback(&q2)).status, SubmitStatus::Accepted);
  EXPECT_EQ(e.submit(test::greedy_params(m, "c", 4), col.callback(&q3)).status, SubmitStatus::QueueFull);
  e.run_until_idle();
  EXPECT_TRUE(q1.done && q2.done);
}

// --kv-cache-mem buys blocks at the real size of the configured types (GGUF block sizes: F16 2
// bytes an element, Q8_0 34 bytes and Q4_0 18 bytes a group of 32, heads padded to whole groups),
// and /metrics reports those bytes.
TEST(EngineRequests, KvMemoryCountsTheBytesOfTheElementTypes) {
  Model& m = *test::stories().model;
  const ModelConfig& mc = m.config();
  const int64_t bs = 16, groups = (mc.head_dim + 31) / 32;
  const auto block_bytes = [&](int64_t k_head_bytes, int64_t v_head_bytes) {
    return static_cast<size_t>(mc.n_layer * mc.n_head_kv * bs * (k_head_bytes + v_head_bytes));
  };
  struct Case {
    KvCacheType type;
    size_t bytes;
  };
  const Case cases[] = {
      {{KvType::F16, KvType::F16, true}, block_bytes(2 * mc.head_dim, 2 * mc.head_dim)},
      {{KvType::Q8_0, KvType::Q8_0, true}, block_bytes(34 * groups, 34 * groups)},
      {{KvType::Q4_0, KvType::Q8_0, true}, block_bytes(18 * groups, 34 * groups)},
  };
  const size_t budget = 200000;
  for (const Case& c : cases) {
    EngineConfig cfg;
    cfg.block_size = 16;
    cfg.kv_type = c.type;
    cfg.kv_cache_bytes = budget;
    Engine e(m, cfg);
    const EngineStats s = e.stats();
    EXPECT_EQ(s.kv_block_bytes, c.bytes) << type_name(c.type);
    EXPECT_EQ(s.kv_blocks_total, static_cast<int32_t>(budget / c.bytes)) << type_name(c.type);
    EXPECT_EQ(s.kv_bytes_total, c.bytes * static_cast<size_t>(s.kv_blocks_total));
    const std::string metrics = e.metrics().render();
    EXPECT_NE(metrics.find("strata:kv_cache_block_bytes " + std::to_string(c.bytes) + "\n"),
              std::string::npos);
    Collector col;
    RequestResult r;
    e.submit(test::greedy_params(m, "Once upon a time", 40), col.callback(&r));
    e.run_until_idle();
    ASSERT_TRUE(r.done);
    EXPECT_EQ(r.choices[0].tokens.size(), 40u);
  }
}

TEST(EngineRequests, BackgroundLoopServesConcurrentSubmittersAndShutsDown) {
  Model& m = *test::stories().model;
  EngineConfig cfg;
  cfg.kv_cache_bytes = 16 << 20;
  Engine e(m, cfg);
  e.start();
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  std::vector<RequestResult> results(8);
  for (int i = 0; i < 8; ++i) {
    RequestResult* r = &results[static_cast<size_t>(i)];
    e.submit(test::greedy_params(m, "Once upon a time", 16), [&, r](const EngineEvent& ev) {
      for (const TokenOutput& t : ev.tokens) r->choices[ev.index].tokens.push_back(t.token);
      if (ev.request_done) {
        std::lock_guard<std::mutex> lock(mu);
        ++done;
        cv.notify_all();
      }
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return done == 8; }));
  }
  EXPECT_TRUE(e.healthy());
  for (auto& r : results) EXPECT_EQ(r.choices[0].tokens, results[0].choices[0].tokens);
  EXPECT_TRUE(e.shutdown(std::chrono::seconds(5)));
  RequestResult late;
  EXPECT_EQ(e.submit(test::greedy_params(m, "a", 4), Collector().callback(&late)).status, SubmitStatus::ShuttingDown);
}

}  // namespace
}  // namespace strata
