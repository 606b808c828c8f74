// Sliding-window models (mistral): the engine gives back the blocks that fall out of every
// layer's window, so a long generation's KV stays bounded, and the output is that of a run that
// keeps every block (the attention never reads below the window).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "common/direct_session.h"
#include "engine_test_util.h"
#include "kv/kv_cache_manager.h"
#include "model/synthetic_model.h"

namespace strata {
namespace {

using test::Collector;
using test::RequestResult;

constexpr int64_t kWindow = 40;  // not a multiple of the block size: a partial block straddles it

struct WindowModel {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
};

WindowModel& window_model() {
  static WindowModel w = [] {
    const SynthPreset p{"swa-test", "mistral", 64, 2, 4, 2, 128, 320, 1024, 10000.0f, kWindow};
    const std::string path =
        (std::filesystem::temp_directory_path() / ("strata-swa-" + std::to_string(getpid()) + ".gguf"))
            .string();
    SynthOptions o;
    o.type = TensorType::F32;
    o.n_threads = 1;
    write_synthetic_model(p, o, path, {});
    WindowModel m;
    m.backend = make_cpu_backend(1);
    m.model = Model::load(path, *m.backend);
    std::filesystem::remove(path);  // the model keeps its own mapping / copy
    return m;
  }();
  return w;
}

// Greedy tokens from a direct session that keeps every position of the context.
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
  RequestParams p = test::greedy_params(m, "Once upon a time there was a little window", n);
  p.stop.ignore_eos = true;
  return p;
}

TEST(EngineSlidingWindow, LongGenerationHoldsAboutOneWindowAndMatchesTheFullCache) {
  Model& m = *window_model().model;
  ASSERT_EQ(m.config().sliding_window, kWindow);
  EngineConfig cfg;
  cfg.block_size = 16;
  cfg.kv_cache_bytes = 64u << 20;
  Engine e(m, cfg);
  const int n = 300;
  const RequestParams p = long_greedy(m, n);
  Collector col;
  RequestResult r;
  e.submit(p, col.callback(&r));
  int32_t peak = 0;
  while (!r.done) {
    e.step();
    peak = std::max(peak, e.stats().kv_blocks_used);
  }
  // Window 40 + this step's token + a partial block: at most 4 blocks of 16; without freeing a
  // sequence of ~310 tokens would hold 20.
  EXPECT_LE(peak, (kWindow + 1 + 2 * cfg.block_size - 2) / cfg.block_size + 1);
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
  EXPECT_EQ(r.choices[0].tokens, full_cache_greedy(m, p.prompt, n));
}

TEST(EngineSlidingWindow, AdmitsRequestsLongerThanTheWholeCache) {
  Model& m = *window_model().model;
  EngineConfig cfg;
  cfg.block_size = 16;
  cfg.max_batched_tokens = 32;
  // 12 blocks = 192 tokens of cache for 400 tokens of sequence, two at a time with n = 2.
  cfg.kv_cache_bytes = 12 * m.kv_geometry(cfg.kv_type, 16).bytes_per_block();
  Engine e(m, cfg);
  ASSERT_EQ(e.stats().kv_blocks_total, 12);
  RequestParams p = long_greedy(m, 390);
  p.n = 2;
  Collector col;
  RequestResult r;
  e.submit(p, col.callback(&r));
  e.run_until_idle();
  ASSERT_TRUE(r.done);
  const std::vector<int32_t> want = full_cache_greedy(m, p.prompt, 390);
  EXPECT_EQ(r.choices[0].tokens, want);
  EXPECT_EQ(r.choices[1].tokens, want);  // greedy: the forked child follows the same path
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
}

TEST(EngineSlidingWindow, DroppingGivesBackOnlyTheSequencesOwnReference) {
  // A block shared with another sequence (or published to the prefix cache) stays allocated
  // and unchanged when one holder drops it.
  KvCacheManager kv(8, 4, true);
  SequenceKv a, b;
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(kv.reserve(a, 16, 0, copies));
  kv.fork(a, b);
  EXPECT_EQ(kv.pool().n_used(), 4);
  EXPECT_EQ(kv.drop_before(a, 9), 2);  // positions 0..7: blocks 0 and 1
  EXPECT_EQ(a.blocks[0], kDroppedBlock);
  EXPECT_EQ(a.blocks[1], kDroppedBlock);
  EXPECT_EQ(kv.pool().n_used(), 4);  // b still holds them
  EXPECT_EQ(kv.pool().ref_count(b.blocks[0]), 1);
  EXPECT_EQ(kv.drop_before(a, 9), 0);  // idempotent
  kv.free(a);
  EXPECT_EQ(kv.pool().n_used(), 4);
  EXPECT_EQ(kv.drop_before(b, 100), 4);
  EXPECT_EQ(kv.pool().n_used(), 0);
  kv.free(b);
  EXPECT_EQ(kv.pool().n_free(), 8);
}

}  // namespace
}  // namespace strata
