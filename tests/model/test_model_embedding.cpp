// strata synth --from: a small real model embedded into a large shape computes the small model's
// function. References: the small model run by Strata, llama.cpp's logits of stories260K
// (../shared/reference), a float64 Python forward pass that reads only llama.cpp's standard keys,
// and placements derived by hand from the layout rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "common/fixtures.h"
#include "core/check.h"
#include "embedding_test_util.h"
#include "formats/gguf_reader.h"
#include "model/embedding_layout.h"
#include "model/model_config.h"

namespace strata {
namespace {

using test::ScratchDir;

ModelConfig small_config(const std::string& path) {
  const auto f = open_model_file(path);
  ModelConfig c = ModelConfig::from_metadata(f->metadata());
  c.n_vocab = f->find_tensor("token_embd.weight")->ne[1];
  return c;
}

// Not in the preset table: 4 query heads per KV head, so real groups hold padding heads, and
// head_dim 32, so W_o has the plain layout for both small models.
SynthPreset gqa4_preset() {
  return {"test-gqa4", "llama", 512, 6, 16, 4, 512, 2048, 2048, 10000.0f, 0};
}

std::vector<std::vector<int32_t>> tinystories_prompts() {
  auto backend = make_cpu_backend(1);
  auto model = Model::load(test::tinystories656k(), *backend);
  std::vector<std::vector<int32_t>> out;
  for (const char* p : {"Once upon a time, there was a little girl named Lily.",
                        "The dog ran to the park and", "Tom and Sue went to the", "One day, the sun was"})
    out.push_back(model->tokenizer().encode(p, true, false));
  return out;
}

// Every number and placement below is worked out by hand from the rules in embedding_layout.cpp
// for stories260K (dim 64, 8/4 heads of 8, ffn 172, eps 1e-5, base 1e4) into tinyllama-1.1b
// (dim 2048, 32/4 heads of 64, ffn 5632).
TEST(EmbeddingPlan, Stories260KIntoTinyLlamaByHand) {
  const EmbeddingLayout L =
      plan_embedding(small_config(test::stories260k()), find_synth_preset("tinyllama-1.1b"));
  EXPECT_EQ(L.head_dim, 64);
  EXPECT_EQ(L.n_vocab, 512);
  EXPECT_DOUBLE_EQ(L.q_scale, std::sqrt(8.0));          // sqrt(64 / 8)
  EXPECT_DOUBLE_EQ(L.norm_scale, std::sqrt(1.0 / 32));  // sqrt(64 / 2048)
  EXPECT_EQ(L.rms_eps, 1e-5f / 32);
  EXPECT_EQ(L.rope_base, 1e32f);  // 10000^(64/8)
  EXPECT_TRUE(L.v_copies);        // 8 < 32, 32 % 8 == 0, min(2, 4) = 2 spans <= 64 / 32
  // Small query head 5 has KV head 2 (2 query heads per KV head): large head 2 * 8 + 1 = 17.
  for (int e = 0; e < 8; ++e) EXPECT_EQ(L.q_rows[17 * 64 + e], 5 * 8 + e);
  for (int e = 8; e < 64; ++e) EXPECT_EQ(L.q_rows[17 * 64 + e], kZero);
  EXPECT_EQ(L.q_rows[16 * 64], 4 * 8);    // small head 4 -> large head 16
  EXPECT_EQ(L.q_rows[18 * 64], kRandom);  // padding head of group 2
  for (int e = 0; e < 8; ++e) EXPECT_EQ(L.k_rows[2 * 64 + e], 2 * 8 + e);
  EXPECT_EQ(L.k_rows[2 * 64 + 8], kZero);
  // Head 5: span (5 % 2) % 4 = 1, offset in the block 5 % 4 = 1 head -> value copy at 32 + 8 = 40.
  // Head 4: span 0, offset 0. Both are KV head 2's values.
  for (int e = 0; e < 8; ++e) {
    EXPECT_EQ(L.v_rows[2 * 64 + 40 + e], 2 * 8 + e);
    EXPECT_EQ(L.v_rows[2 * 64 + e], 2 * 8 + e);
  }
  EXPECT_EQ(L.v_rows[2 * 64 + 8], kZero);
  EXPECT_EQ(L.v_rows[2 * 64 + 32], kZero);
  // W_o: head 5's slot (large head 17) holds small block 5 / 4 = 1 (columns 32..63) in span 1.
  for (int j = 0; j < 32; ++j) {
    EXPECT_EQ(L.o_cols[17 * 64 + 32 + j], 32 + j);
    EXPECT_EQ(L.o_cols[17 * 64 + j], kZero);
    EXPECT_EQ(L.o_cols[16 * 64 + j], 32 + j);  // head 4: same block, span 0
  }
  EXPECT_EQ(L.o_cols[18 * 64], kZero);
  // FFN: units [172, 256) are zero rows (ffn_down blocks straddle 172), the rest random.
  EXPECT_EQ(L.ffn_rows[171], 171);
  EXPECT_EQ(L.ffn_rows[172], kZero);
  EXPECT_EQ(L.ffn_rows[255], kZero);
  EXPECT_EQ(L.ffn_rows[256], kRandom);
  EXPECT_EQ(L.ffn_cols[171], 171);
  EXPECT_EQ(L.ffn_cols[172], kZero);
  EXPECT_EQ(L.residual[63], 63);
  EXPECT_EQ(L.residual[64], kZero);
  EXPECT_TRUE(L.is_real_layer(4));
  EXPECT_FALSE(L.is_real_layer(5));
}

TEST(EmbeddingPlan, TinyStoriesIntoTinyLlamaByHand) {
  const EmbeddingLayout L =
      plan_embedding(small_config(test::tinystories656k()), find_synth_preset("tinyllama-1.1b"));
  EXPECT_DOUBLE_EQ(L.q_scale, 2.0);      // sqrt(64 / 16): exact
  EXPECT_DOUBLE_EQ(L.norm_scale, 0.25);  // sqrt(128 / 2048)
  EXPECT_EQ(L.rms_eps, 1e-6f / 16);
  EXPECT_EQ(L.rope_base, 1e16f);  // 10000^4
  EXPECT_TRUE(L.v_copies);
  // Head 3 (KV head 1): large head 9, span 1, value copy at 32 + (3 % 2) * 16 = 48.
  for (int e = 0; e < 16; ++e) {
    EXPECT_EQ(L.q_rows[9 * 64 + e], 3 * 16 + e);
    EXPECT_EQ(L.v_rows[1 * 64 + 48 + e], 16 + e);
  }
  for (int j = 0; j < 32; ++j) EXPECT_EQ(L.o_cols[9 * 64 + 32 + j], 32 + j);  // small block 1 = heads 2, 3
  EXPECT_EQ(L.ffn_rows[383], 383);
  EXPECT_EQ(L.ffn_rows[384], kZero);  // up to 512
  EXPECT_EQ(L.ffn_rows[512], kRandom);
}

TEST(EmbeddingPlan, NeoXHeadsKeepTheirPairs) {
  ModelConfig c = small_config(test::stories260k());
  c.arch = "qwen2";
  c.rope.style = RopeStyle::NeoX;
  const EmbeddingLayout L =
      plan_embedding(c, {"t", "qwen2", 512, 8, 8, 4, 512, 512, 512, 1e6f, 0});  // head_dim 64
  // Pair (i, i + 4) of a small head of 8 goes to (i, i + 32) of the large head.
  EXPECT_EQ(L.q_rows[0], 0);
  EXPECT_EQ(L.q_rows[3], 3);
  EXPECT_EQ(L.q_rows[32], 4);
  EXPECT_EQ(L.q_rows[35], 7);
  EXPECT_EQ(L.q_rows[4], kZero);
}

void expect_one_line_error(const ModelConfig& c, const SynthPreset& p, const std::string& needle) {
  try {
    plan_embedding(c, p);
    ADD_FAILURE() << "no error for preset " << p.name << " (expected '" << needle << "')";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(EmbeddingPlan, RejectsWhatDoesNotFit) {
  const ModelConfig c = small_config(test::stories260k());  // 64 dims, 5 layers, 8/4 heads of 8, ffn 172
  expect_one_line_error(c, find_synth_preset("synth-tiny"), "layer count (5)");
  expect_one_line_error(c, {"t", "llama", 32, 8, 4, 4, 512, 512, 512, 1e4f, 0}, "embedding length (64)");
  expect_one_line_error(c, {"t", "llama", 512, 8, 128, 4, 512, 512, 512, 1e4f, 0}, "head dimension (8)");
  expect_one_line_error(c, {"t", "llama", 512, 8, 8, 4, 128, 512, 512, 1e4f, 0}, "feed-forward length (172)");
  expect_one_line_error(c, {"t", "llama", 512, 8, 8, 2, 512, 512, 512, 1e4f, 0}, "KV head count (4)");
  expect_one_line_error(c, {"t", "llama", 512, 8, 4, 4, 512, 512, 512, 1e4f, 0}, "2 query heads per KV head");
  expect_one_line_error(c, find_synth_preset("qwen2-0.5b"), "same architecture");
  ModelConfig big_base = c;
  big_base.rope.freq_base = 1e6f;  // 1e6^8 = 1e48 is beyond float
  expect_one_line_error(big_base, find_synth_preset("tinyllama-1.1b"), "exceeds the float range");
  ModelConfig partial = c;
  partial.rope.n_rot = 4;
  expect_one_line_error(partial, find_synth_preset("tinyllama-1.1b"), "partial rotary");
}

struct EmbedCase {
  const char* preset;  // "gqa4": gqa4_preset()
  TensorType type;
};

SynthPreset preset_of(const EmbedCase& c) {
  return std::string(c.preset) == "gqa4" ? gqa4_preset() : find_synth_preset(c.preset);
}

std::string case_name(const ::testing::TestParamInfo<EmbedCase>& info) {
  std::string n = std::string(info.param.preset) + "_" + std::string(type_name(info.param.type));
  for (char& ch : n)
    if (ch == '-' || ch == '.') ch = '_';
  return n;
}

class EmbeddedLogits : public ::testing::TestWithParam<EmbedCase> {};

// Limit on the relative L2 distance between the embedded model's logits and the small model's
// (in the same type). F32: float rounding only (sums over wider rows, sqrt(r) in the norms, an
// irrational q_scale): measured 1e-7 to 3e-7. F16 with a power-of-two q_scale: the same F16
// weights, measured bit-identical logits. F16 with an irrational q_scale (stories260K: sqrt(8)):
// W_q holds f16(sqrt(8) w) instead of sqrt(8) f16(w), two roundings of the same value, so the
// distance is at most that of F16 rounding itself: the small model's F16 vs F32 distance.
double same_function_limit(TensorType type, double q_scale, double f16_rounding) {
  if (type == TensorType::F32) return 2e-5;
  const bool exact_scale = std::exp2(std::round(std::log2(q_scale))) == q_scale;
  return exact_scale ? 2e-5 : f16_rounding;
}

double small_f16_rounding(const std::string& small, const std::vector<std::vector<int32_t>>& prompts,
                          const ScratchDir& dir) {
  const std::string f16 = dir.path("small-f16-rounding.gguf");
  test::write_converted(*open_model_file(small), TensorType::F16, f16);
  return test::relative_l2(test::model_logits(f16, prompts), test::model_logits(small, prompts));
}

// F32 and F16 files against the small model in the same type, and (stories260K) against
// llama.cpp's F32 reference with the reference tolerance.
TEST_P(EmbeddedLogits, Stories260KIsTheSmallModel) {
  const EmbedCase ec = GetParam();
  ScratchDir dir;
  const auto ref = test::stories_reference();
  const auto prompts = test::tokens_of(ref);
  const std::string big = dir.path("big.gguf"), small = dir.path("small.gguf");
  test::embed(test::stories260k(), preset_of(ec), ec.type, big);
  test::write_converted(*open_model_file(test::stories260k()), ec.type, small);
  const auto big_logits = test::model_logits(big, prompts);
  const double vs_small = test::relative_l2(big_logits, test::model_logits(small, prompts));
  std::vector<std::vector<float>> llama_cpp;
  for (const auto& r : ref) llama_cpp.push_back(r.logits);
  const double vs_llama = test::relative_l2(test::model_logits(big, prompts, KvCacheType{}), llama_cpp);
  const double rounding =
      ec.type == TensorType::F16 ? small_f16_rounding(test::stories260k(), prompts, dir) : 0;
  std::printf("stories260K in %s %s: vs small %.2e (small F16 vs F32 %.2e), vs llama.cpp %.2e\n", ec.preset,
              std::string(type_name(ec.type)).c_str(), vs_small, rounding, vs_llama);
  EXPECT_LE(vs_small,
            same_function_limit(
                ec.type, plan_embedding(small_config(test::stories260k()), preset_of(ec)).q_scale, rounding));
  EXPECT_LE(vs_llama, 2e-3);
}

TEST_P(EmbeddedLogits, TinyStories656KIsTheSmallModel) {
  const EmbedCase ec = GetParam();
  ScratchDir dir;
  const auto prompts = tinystories_prompts();
  const std::string big = dir.path("big.gguf"), small = dir.path("small.gguf");
  test::embed(test::tinystories656k(), preset_of(ec), ec.type, big);
  EXPECT_EQ(GgufFile::open(big)->find_tensor("output.weight"), nullptr);  // tied, like the small model
  test::write_converted(*open_model_file(test::tinystories656k()), ec.type, small);
  const double vs_small =
      test::relative_l2(test::model_logits(big, prompts), test::model_logits(small, prompts));
  std::printf("tinystories656k in %s %s: vs small %.2e\n", ec.preset, std::string(type_name(ec.type)).c_str(),
              vs_small);
  EXPECT_LE(vs_small,
            same_function_limit(
                ec.type, plan_embedding(small_config(test::tinystories656k()), preset_of(ec)).q_scale, 0));
}

INSTANTIATE_TEST_SUITE_P(Presets, EmbeddedLogits,
                         ::testing::Values(EmbedCase{"tinyllama-mini", TensorType::F32},
                                           EmbedCase{"tinyllama-mini", TensorType::F16},
                                           EmbedCase{"gqa4", TensorType::F32}),
                         case_name);

// The file is a plain llama GGUF: standard keys only, llama.cpp's tensor names and shapes, tied
// like the small model. A float64 forward pass that knows only those keys (llama_reference.py)
// reproduces llama.cpp's logits of the small model from it.
TEST(EmbeddedFile, IsAPlainLlamaGgufThatAnIndependentReaderComputes) {
  ScratchDir dir;
  const std::string big = dir.path("big.gguf");
  // Like tinyllama-mini with a narrower FFN, to keep the Python pass short.
  const SynthPreset preset = {"test-py", "llama", 512, 6, 8, 4, 256, 2048, 2048, 10000.0f, 0};
  test::embed(test::stories260k(), preset, TensorType::F32, big);
  const auto f = GgufFile::open(big);
  const std::set<std::string> standard = {"general.architecture",
                                          "general.name",
                                          "general.file_type",
                                          "general.quantization_version",
                                          "llama.context_length",
                                          "llama.embedding_length",
                                          "llama.feed_forward_length",
                                          "llama.block_count",
                                          "llama.attention.head_count",
                                          "llama.attention.head_count_kv",
                                          "llama.attention.layer_norm_rms_epsilon",
                                          "llama.rope.freq_base",
                                          "llama.rope.dimension_count",
                                          "llama.vocab_size"};
  for (const auto& [key, value] : f->metadata().entries())
    EXPECT_TRUE(standard.count(key) || key.starts_with("tokenizer.ggml.")) << key;
  std::set<std::string> names;
  for (const TensorInfo& t : f->tensors()) names.insert(t.name);
  EXPECT_EQ(names.size(), 3u + 6u * 9u);
  EXPECT_TRUE(names.count("output.weight"));  // the stories260K GGUF has its own output matrix
  for (int il = 0; il < 6; ++il)
    for (const char* s : {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate",
                          "ffn_up", "ffn_down"})
      EXPECT_TRUE(names.count("blk." + std::to_string(il) + "." + s + ".weight")) << il << " " << s;
  EXPECT_EQ(f->find_tensor("token_embd.weight")->ne[0], 512);
  EXPECT_EQ(f->find_tensor("token_embd.weight")->ne[1], 512);
  EXPECT_EQ(f->find_tensor("blk.5.ffn_down.weight")->ne[0], 256);

  const auto ref = test::stories_reference();
  // The first positions only (the pass is slow in pure Python); causal, so they are exact.
  const size_t n = 3;
  const std::vector<int32_t> tokens(ref[0].tokens.begin(), ref[0].tokens.begin() + n);
  const std::vector<float> llama_cpp(ref[0].logits.begin(), ref[0].logits.begin() + n * 512);
  std::string ids;
  for (int32_t t : tokens) ids += (ids.empty() ? "" : ",") + std::to_string(t);
  const auto r =
      test::run_command({"python3", test::source_dir() + "/tests/model/llama_reference.py", big, ids});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json out = nlohmann::json::parse(r.out);
  std::vector<float> py;
  for (const auto& row : out["logits"])
    for (double v : row) py.push_back(static_cast<float>(v));
  const double vs_llama = test::relative_l2({py}, {llama_cpp});
  const double vs_strata = test::relative_l2({py}, test::model_logits(big, {tokens}));
  std::printf("float64 reference of the embedded file: vs llama.cpp %.2e, vs Strata %.2e\n", vs_llama,
              vs_strata);
  EXPECT_LE(vs_llama, 2e-3);  // float64 vs llama.cpp on F32 models: ~3e-4 (../shared/README.md)
  EXPECT_LE(vs_strata, 2e-5);
}

// Small random models of the other architectures: qwen2 (NeoX rope, q/k/v biases) and mistral
// (sliding window, carried over from the small model; the prompt is longer than the window).
TEST(EmbeddedFile, Qwen2AndMistralSmallModels) {
  ScratchDir dir;
  const SynthPreset small_presets[] = {{"small-qwen2", "qwen2", 64, 2, 4, 2, 96, 512, 512, 1e4f, 0},
                                       {"small-mistral", "mistral", 64, 2, 4, 2, 96, 512, 512, 1e4f, 8}};
  const SynthPreset big_presets[] = {{"big-qwen2", "qwen2", 256, 3, 8, 2, 256, 512, 512, 1e6f, 0},
                                     {"big-mistral", "mistral", 256, 3, 8, 2, 256, 512, 512, 1e4f, 4096}};
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(small_presets[i].arch);
    const std::string small = dir.path(std::to_string(i) + "small.gguf"),
                      big = dir.path(std::to_string(i) + "big.gguf");
    SynthOptions o;
    o.type = TensorType::F32;
    o.seed = 7;
    write_synthetic_model(small_presets[i], o, small, {});
    test::embed(small, big_presets[i], TensorType::F32, big);
    const std::vector<std::vector<int32_t>> prompts = {
        {1, 300, 301, 302, 303, 304, 305, 306, 307, 308, 309, 310, 311, 312, 313, 314, 315, 316, 317, 318}};
    const double err =
        test::relative_l2(test::model_logits(big, prompts), test::model_logits(small, prompts));
    std::printf("random %s embedded: vs small %.2e\n", small_presets[i].arch.c_str(), err);
    EXPECT_LE(err, 2e-5);
  }
}

TEST(EmbeddedFile, SmallModelErrorsAreOneLine) {
  ScratchDir dir;
  const auto small = open_model_file(test::stories260k());
  SynthOptions o;
  try {
    write_embedded_model(find_synth_preset("synth-tiny"), *small, o, dir.path("x.gguf"), {});
    ADD_FAILURE() << "stories260K (5 layers) fit synth-tiny (4 layers)";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer count"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path("x.gguf")));
}

}  // namespace
}  // namespace strata
