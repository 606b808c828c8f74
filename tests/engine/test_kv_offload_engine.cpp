// KV offloading end to end on stories260K: a prefix evicted from a small pool comes back from
// host RAM, a new engine on the same directory (a restart) restores it from disk, and in both
// cases the greedy output equals the cold output of an engine without tiers; an engine with
// another KV type deletes the first engine's files instead of using them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "engine_test_util.h"

namespace fs = std::filesystem;

namespace strata {
namespace {

using test::Collector;
using test::RequestResult;

const std::string kPrompt =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her "
    "friends. One day, she saw a big red ball under a tree and";

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) {
    path = fs::temp_directory_path() / ("strata-offload-engine-" + std::to_string(::getpid()) + "-" + tag);
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

RequestResult run(Engine& e, const std::string& prompt, int max_tokens) {
  Collector col;
  RequestResult r;
  e.submit(test::greedy_params(*test::stories().model, prompt, max_tokens), col.callback(&r));
  e.run_until_idle();
  return r;
}

std::vector<int32_t> cold_tokens(const std::string& prompt, int max_tokens) {
  EngineConfig cfg;
  cfg.kv_cache_bytes = 16 << 20;
  cfg.prefix_caching = false;
  Engine e(*test::stories().model, cfg);
  return run(e, prompt, max_tokens).choices[0].tokens;
}

TEST(KvOffloadEngine, AnEvictedPrefixComesBackFromHostRamWithTheSameOutput) {
  Model& m = *test::stories().model;
  EngineConfig cfg;
  const size_t bpb = m.kv_geometry(cfg.kv_type, 16).bytes_per_block();
  cfg.kv_cache_bytes = 5 * bpb;  // a 4-block request at a time: the second evicts the first's blocks
  cfg.kv_offload_mem = 64 * bpb;
  Engine e(m, cfg);
  const RequestResult first = run(e, kPrompt, 16);
  const std::string other =
      "The sun was hot and the sky was blue. Tom and his dog went to the beach to dig in the sand and look "
      "for "
      "shells by the water";
  run(e, other, 16);
  ASSERT_GT(e.metrics().offload_host.written_bytes.value(), 0);
  const RequestResult again = run(e, kPrompt, 16);
  EXPECT_GE(again.usage.cached_prompt_tokens, 16);
  EXPECT_GT(e.metrics().offload_host.hits.value(), 0);
  EXPECT_GT(e.metrics().offload_host.read_bytes.value(), 0);
  const auto cold = cold_tokens(kPrompt, 16);
  EXPECT_EQ(first.choices.at(0).tokens, cold);
  EXPECT_EQ(again.choices.at(0).tokens, cold);
  EXPECT_NE(e.metrics().render().find("strata:kv_offload_host_hits_total"), std::string::npos);
}

TEST(KvOffloadEngine, PreemptedRequestsSwapBackInFromHostRamWithTheirSoloOutputs) {
  Model& m = *test::stories().model;
  EngineConfig cfg;
  const size_t bpb = m.kv_geometry(cfg.kv_type, 16).bytes_per_block();
  // 12 requests x (~10 prompt + 64 output) tokens need ~60 blocks; give 16, and RAM for 256.
  cfg.kv_cache_bytes = 16 * bpb;
  cfg.kv_offload_mem = 256 * bpb;
  Engine e(m, cfg);
  Collector col;
  std::vector<RequestResult> results(12);
  std::vector<std::string> prompts;
  for (int i = 0; i < 12; ++i) {
    prompts.push_back(std::string(i % 2 ? "The little dog" : "Once upon a time") +
                      std::string(static_cast<size_t>(i % 4), '!'));
    e.submit(test::greedy_params(m, prompts.back(), 64), col.callback(&results[static_cast<size_t>(i)]));
  }
  e.run_until_idle();
  EXPECT_GT(e.stats().preemptions, 0);
  EXPECT_GT(e.metrics().offload_host.hits.value(), 0);  // swapped-out blocks came back
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(results[static_cast<size_t>(i)].done);
    EXPECT_EQ(results[static_cast<size_t>(i)].choices.at(0).tokens,
              cold_tokens(prompts[static_cast<size_t>(i)], 64))
        << i;
  }
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
}

TEST(KvOffloadEngine, ARestartedEngineOnTheSameDirectoryRestoresThePrefixFromDisk) {
  Model& m = *test::stories().model;
  TempDir dir("restart");
  EngineConfig cfg;
  cfg.kv_cache_bytes = 16 << 20;
  cfg.kv_offload_dir = dir.path.string();
  cfg.kv_offload_disk = 64 << 20;
  std::vector<int32_t> first;
  {
    Engine e(m, cfg);
    const RequestResult r = run(e, kPrompt, 16);
    EXPECT_EQ(r.usage.cached_prompt_tokens, 0);
    first = r.choices.at(0).tokens;
  }  // the engine is gone; its blocks are on disk
  ASSERT_FALSE(fs::is_empty(dir.path));
  Engine e(m, cfg);
  const RequestResult r = run(e, kPrompt, 16);
  const int64_t n_prompt = static_cast<int64_t>(m.tokenizer().encode(kPrompt, true, false).size());
  EXPECT_EQ(r.usage.cached_prompt_tokens, (n_prompt - 1) / 16 * 16);  // every full block but the last token's
  EXPECT_GT(e.metrics().offload_disk.hits.value(), 0);
  EXPECT_EQ(e.metrics().offload_rejected.value(), 0);
  const auto cold = cold_tokens(kPrompt, 16);
  EXPECT_EQ(first, cold);
  EXPECT_EQ(r.choices.at(0).tokens, cold);
}

TEST(KvOffloadEngine, AnotherKvTypeDeletesTheFilesInsteadOfUsingThem) {
  Model& m = *test::stories().model;
  TempDir dir("foreign");
  EngineConfig cfg;
  cfg.kv_cache_bytes = 16 << 20;
  cfg.kv_offload_dir = dir.path.string();
  {
    Engine e(m, cfg);
    run(e, kPrompt, 4);
  }
  ASSERT_FALSE(fs::is_empty(dir.path));
  EngineConfig q8 = cfg;
  q8.kv_type = KvCacheType{KvType::Q8_0, KvType::Q8_0, true};
  Engine e(m, q8);
  const RequestResult r = run(e, kPrompt, 4);
  EXPECT_GT(e.metrics().offload_rejected.value(), 0);
  EXPECT_EQ(r.usage.cached_prompt_tokens, 0);
  EXPECT_EQ(e.metrics().offload_disk.hits.value(), 0);
}

}  // namespace
}  // namespace strata
