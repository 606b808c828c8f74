// Hyper-parameter handling the llama.cpp fixtures do not exercise, against values derived by hand
// from the model cards and papers: DeepSeek's YaRN attention scale, phi3's LongRoPE factor choice,
// gemma's sliding-window layer patterns, and the KV cache of MLA (the latent, not full K/V).
#include <gtest/gtest.h>

#include <cmath>

#include "backend/backend.h"
#include "common/direct_session.h"
#include "common/fixtures.h"
#include "formats/gguf_reader.h"
#include "formats/gguf_writer.h"
#include "model/model.h"

namespace strata {
namespace {

Metadata fixture_metadata(const std::string& arch) {
  return GgufFile::open(test::shared_path("models/arch/" + arch + "-f16.gguf"))->metadata();
}

TEST(ArchConfig, DeepSeekYarnScalesScoresBySquaredMscale) {
  // DeepSeek-V2-Lite's rope scaling: factor 40 over 4096, mscale = mscale_all_dim = 0.707
  // (written by the converter as yarn_log_multiplier = 0.1 * 0.707). The model card's attention
  // (modeling_deepseek.py): softmax_scale = q_head_dim^-0.5 * m^2, m = 0.1 * 0.707 * ln 40 + 1,
  // and cos/sin scaled by yarn_get_mscale(40, mscale) / yarn_get_mscale(40, mscale_all_dim) = 1.
  Metadata md = fixture_metadata("deepseek2-lite");
  md.set("deepseek2.rope.scaling.type", GgufValue::of_string("yarn"));
  md.set("deepseek2.rope.scaling.factor", GgufValue::of_f32(40.0f));
  md.set("deepseek2.rope.scaling.original_context_length", GgufValue::of_u32(4096));
  md.set("deepseek2.rope.scaling.yarn_log_multiplier", GgufValue::of_f32(0.0707f));
  const ModelConfig c = ModelConfig::from_metadata(md);
  const double m = 0.1 * 0.707 * std::log(40.0) + 1.0;
  EXPECT_NEAR(c.attn_scale, m * m / std::sqrt(96.0), 1e-5);
  EXPECT_NEAR(c.rope.attn_factor, 1.0, 1e-6);
  EXPECT_EQ(c.rope.scaling, RopeParams::Scaling::Yarn);
  EXPECT_EQ(c.rope.yarn_original_ctx, 4096);
  // Without the multiplier the scores keep 1/sqrt(96) times YaRN's magnitude squared.
  md.erase("deepseek2.rope.scaling.yarn_log_multiplier");
  const ModelConfig plain = ModelConfig::from_metadata(md);
  const double mscale = 0.1 * std::log(40.0) + 1.0;
  EXPECT_NEAR(plain.rope.attn_factor, mscale, 1e-6);
  EXPECT_NEAR(plain.attn_scale, mscale * mscale / std::sqrt(96.0), 1e-5);
}

TEST(ArchConfig, GptOssYarnMagnitude) {
  // gpt-oss: factor 32, no log multiplier: cos/sin times 0.1 ln 32 + 1 (YaRN's sqrt(1/t)).
  const ModelConfig c = ModelConfig::from_metadata(fixture_metadata("gpt-oss"));
  EXPECT_NEAR(c.rope.attn_factor, 0.1 * std::log(32.0) + 1.0, 1e-6);
  EXPECT_NEAR(c.attn_scale, 1.0 / 8.0, 1e-7);
  // Both layer kinds rotate alike; even layers slide (llama.cpp's pattern 2).
  EXPECT_EQ(c.rope_swa.scaling, RopeParams::Scaling::Yarn);
  EXPECT_TRUE(c.is_swa(0));
  EXPECT_FALSE(c.is_swa(1));
}

TEST(ArchConfig, GemmaWindowPatternsAndRotations) {
  const ModelConfig g2 = ModelConfig::from_metadata(fixture_metadata("gemma2"));
  EXPECT_EQ(g2.window(0), 8);
  EXPECT_EQ(g2.window(1), 0);
  EXPECT_FLOAT_EQ(g2.embd_scale, 16.0f);
  EXPECT_FLOAT_EQ(g2.attn_softcap, 10.0f);
  Metadata md = fixture_metadata("gemma3");
  const ModelConfig g3 = ModelConfig::from_metadata(md);  // pattern 3: layers 0, 1 slide, 2 is global
  EXPECT_TRUE(g3.is_swa(0) && g3.is_swa(1) && !g3.is_swa(2));
  EXPECT_EQ(g3.rope_for(0).scaling, RopeParams::Scaling::None);
  EXPECT_FLOAT_EQ(g3.rope_for(0).freq_base, 10000.0f);
  EXPECT_EQ(g3.rope_for(2).scaling, RopeParams::Scaling::Linear);
  EXPECT_FLOAT_EQ(g3.rope_for(2).factor, 8.0f);
  EXPECT_FLOAT_EQ(g3.rope_for(2).freq_base, 1e6f);
  // Without the key, gemma3's period is 6 (llama.cpp): all three layers slide.
  md.erase("gemma3.attention.sliding_window_pattern");
  const ModelConfig g3_default = ModelConfig::from_metadata(md);
  EXPECT_TRUE(g3_default.is_swa(0) && g3_default.is_swa(1) && g3_default.is_swa(2));
}

// A phi3 file with LongRoPE factors: the short ones when the model runs within its original
// context, the long ones beyond it (llama.cpp's rule). Factors that change nothing (all 1, the
// attention factor 1) must reproduce llama.cpp's logits of the fixture, which has none; factors
// of 2 must change them.
TEST(ArchConfig, Phi3LongRopeFactorsFollowTheContext) {
  const std::string dir = ::testing::TempDir();
  const auto f = GgufFile::open(test::shared_path("models/arch/phi3-f16.gguf"));
  auto write = [&](const std::string& name, float short_f, float long_f) {
    GgufWriter w;
    w.set_metadata(f->metadata());
    w.metadata().set("phi3.rope.scaling.original_context_length", GgufValue::of_u32(1024));
    for (const TensorInfo& t : f->tensors())
      w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + std::max(1, t.n_dims)),
                   t.data);
    static std::vector<float> s, l;
    s.assign(32, short_f);
    l.assign(32, long_f);
    w.add_tensor("rope_factors_short.weight", TensorType::F32, {32}, s.data());
    w.add_tensor("rope_factors_long.weight", TensorType::F32, {32}, l.data());
    const std::string path = dir + "/" + name;
    w.write(path);
    return path;
  };
  auto backend = make_cpu_backend(1);
  auto logits_of = [&](const std::string& path, int64_t n_ctx) {
    ModelLoadOptions o;
    o.n_ctx = n_ctx;
    auto m = Model::load(path, *backend, o);
    test::DirectSession s(*m, 8);
    return s.eval({1, 403, 407, 261, 378});
  };
  auto base = Model::load(test::shared_path("models/arch/phi3-f16.gguf"), *backend);
  test::DirectSession sb(*base, 8);
  const std::vector<float> want = sb.eval({1, 403, 407, 261, 378});
  const std::string neutral_short = write("short1.gguf", 1.0f, 2.0f);
  const std::string neutral_long = write("long1.gguf", 2.0f, 1.0f);
  EXPECT_EQ(logits_of(neutral_short, 1024), want);  // within 1024: short factors (all 1)
  EXPECT_NE(logits_of(neutral_short, 4096), want);  // beyond: long factors (2)
  EXPECT_EQ(logits_of(neutral_long, 4096), want);   // ... which are all 1 here
  EXPECT_NE(logits_of(neutral_long, 1024), want);
}

TEST(ArchConfig, MlaCachesTheLatentOnly) {
  // deepseek2 fixture: per token and layer the cache holds kv_lora_rank + rope = 128 + 32 values
  // (F16: 320 bytes), where the same attention as MHA would cache K (4 heads x 96) and V
  // (4 heads x 64): 1280 bytes.
  auto backend = make_cpu_backend(1);
  auto m = Model::load(test::shared_path("models/arch/deepseek2-f16.gguf"), *backend);
  const KvGeometry g = m->kv_geometry({}, 16);
  EXPECT_TRUE(g.v_in_k);
  EXPECT_EQ(g.head_dim, 160);
  EXPECT_EQ(g.v_dim(), 128);
  EXPECT_EQ(g.n_head_kv, 1);
  const size_t per_token = g.bytes_per_block() / 16;
  EXPECT_EQ(per_token, size_t{3} * 160 * 2);
  const ModelConfig& c = m->config();
  const size_t mha_per_token =
      static_cast<size_t>(c.n_layer * c.n_head * (c.mla.qk_nope + c.mla.qk_rope + c.mla.v_head)) * 2;
  EXPECT_EQ(mha_per_token, size_t{3} * 1280);
}

}  // namespace
}  // namespace strata
