// `strata synth` presets of the newer architectures: each preset's metadata is a valid model of
// its architecture, and a scaled-down copy of each writes a GGUF that the decoder binds (every
// tensor present with the shape it expects) and runs to finite logits.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "backend/backend.h"
#include "common/direct_session.h"
#include "model/model.h"
#include "model/synthetic_model.h"

namespace strata {
namespace {

std::vector<SynthPreset> arch_presets() {
  std::vector<SynthPreset> out;
  for (const SynthPreset& p : synth_presets())
    if (is_arch_preset(p)) out.push_back(p);
  return out;
}

// The same architecture and options at toy sizes.
SynthPreset shrink(SynthPreset p) {
  p.n_embd = 64;
  p.n_layer = 2;
  p.n_head = 4;
  p.n_head_kv = p.arch == "deepseek2" ? 1 : 2;
  if (p.head_dim) p.head_dim = 32;
  if (p.n_ff) p.n_ff = 96;
  p.n_vocab = 300;
  if (p.sliding_window) p.sliding_window = 4;
  if (p.n_expert) {
    p.n_expert = 4;
    p.n_expert_used = 2;
    p.n_ff_exp = 32;
  }
  if (p.n_group) {
    p.n_group = 2;
    p.n_group_used = 1;
  }
  if (p.kv_lora) {
    p.q_lora = 32;
    p.kv_lora = 32;
    p.qk_nope = 16;
    p.qk_rope = 16;
    p.v_head = 16;
  }
  return p;
}

TEST(SyntheticArch, EveryFamilyHasAPreset) {
  std::vector<std::string> archs;
  for (const SynthPreset& p : arch_presets()) archs.push_back(p.arch + (p.n_expert ? "+moe" : ""));
  for (const char* want : {"qwen3", "qwen3moe+moe", "gemma2", "gemma3", "phi3", "llama+moe", "deepseek2+moe",
                           "gpt-oss+moe", "olmo2"})
    EXPECT_NE(std::find(archs.begin(), archs.end(), want), archs.end()) << want;
}

class SyntheticArchTest : public ::testing::TestWithParam<SynthPreset> {};

TEST_P(SyntheticArchTest, ScaledDownPresetLoadsAndRuns) {
  const SynthPreset p = shrink(GetParam());
  const std::string path = ::testing::TempDir() + "/synth-" + p.name + ".gguf";
  SynthOptions o;
  o.type = TensorType::Q8_0;
  o.n_threads = 1;
  write_synthetic_model(p, o, path, {});
  auto backend = make_cpu_backend(1);
  auto model = Model::load(path, *backend);
  EXPECT_EQ(model->config().arch, p.arch);
  EXPECT_EQ(model->config().moe.n_expert, p.n_expert);
  test::DirectSession session(*model, 16);
  const std::vector<float>& logits = session.eval({1, 100, 200, 7, 42, 9}, /*all_logits=*/true);
  ASSERT_EQ(logits.size(), 6u * 300u);
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Presets, SyntheticArchTest, ::testing::ValuesIn(arch_presets()),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace strata
