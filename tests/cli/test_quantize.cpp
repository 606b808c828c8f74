// `strata quantize`: runs the binary on the GGUF, llama2.c and Hugging Face fixtures and checks
// the output file: metadata carried over, general.file_type as llama.cpp numbers it (read from
// the synth-tiny files llama-quantize wrote), tensor types and shapes, values close to the source.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <tuple>

#include "common/fixtures.h"
#include "core/check.h"
#include "formats/gguf_reader.h"
#include "formats/model_file.h"
#include "quant/quantize.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

class QuantizeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-quantize-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string out(const std::string& name) const { return (dir_ / name).string(); }

  // --pure: every matrix TYPE (llama-quantize --pure), which most tests here check; the
  // mixtures are tested against llama.cpp's file below.
  test::CommandResult quantize(const std::string& in, const std::string& out_path, const std::string& type,
                               bool pure = true) {
    std::vector<std::string> argv = {test::strata_binary(), "quantize", in, out_path, type, "-t", "2"};
    if (pure) argv.push_back("--pure");
    return test::run_command(argv);
  }

  fs::path dir_;
};

std::vector<float> dequantized(const TensorInfo& t) {
  std::vector<float> v(static_cast<size_t>(t.n_elements()));
  const int64_t rows = t.n_elements() / t.ne[0];
  const size_t rb = row_bytes(t.type, t.ne[0]);
  for (int64_t r = 0; r < rows; ++r)
    dequantize_row(t.type, static_cast<const uint8_t*>(t.data) + r * rb, v.data() + r * t.ne[0], t.ne[0]);
  return v;
}

// ||a - b|| / ||b||
double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

int64_t fixture_file_type(const std::string& suffix) {
  const auto f = GgufFile::open(test::shared_path("models/synth-tiny/synth-tiny-" + suffix + ".gguf"));
  return *f->metadata().get_int("general.file_type");
}

// Output tensors match the source's names and shapes; 2-D weights are `wanted` (or the
// fallback when rows do not split into its blocks), 1-D ones F32; values within `tolerance`.
void expect_converted(const ModelFile& src, const ModelFile& dst, TensorType wanted, double tolerance) {
  ASSERT_EQ(dst.tensors().size(), src.tensors().size());
  for (size_t i = 0; i < src.tensors().size(); ++i) {
    const TensorInfo& s = src.tensors()[i];
    const TensorInfo& d = dst.tensors()[i];
    SCOPED_TRACE(s.name);
    ASSERT_EQ(d.name, s.name);
    EXPECT_EQ(d.n_dims, s.n_dims);
    EXPECT_EQ(d.ne, s.ne);
    const TensorType expect = s.n_dims == 1 ? TensorType::F32 : fallback_type(wanted, s.ne[0]);
    EXPECT_EQ(d.type, expect);
    EXPECT_LE(relative_error(dequantized(d), dequantized(s)), tolerance);
  }
}

TEST_F(QuantizeCli, Stories260KToQ8_0) {
  const std::string src_path = test::shared_path("models/stories260K/stories260K.gguf");
  const auto r = quantize(src_path, out("q8.gguf"), "q8_0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  // ffn_down rows are 172 long: no whole Q8_0 blocks, so llama.cpp's fallback (F16) applies.
  EXPECT_NE(
      r.err.find("blk.0.ffn_down.weight [172 x 64]: rows of 172 do not fit q8_0 blocks of 32, using f16"),
      std::string::npos)
      << r.err;
  const auto src = GgufFile::open(src_path);
  const auto dst = GgufFile::open(out("q8.gguf"));
  for (const auto& [key, value] : src->metadata().entries()) {
    const GgufValue* v = dst->metadata().find(key);
    ASSERT_NE(v, nullptr) << key;
    EXPECT_EQ(v->type(), value.type()) << key;
    EXPECT_EQ(v->to_display_string(SIZE_MAX), value.to_display_string(SIZE_MAX)) << key;
  }
  EXPECT_EQ(dst->metadata().get_int("general.file_type"), fixture_file_type("q8_0"));
  EXPECT_EQ(dst->metadata().get_int("general.quantization_version"), 2);
  expect_converted(*src, *dst, TensorType::Q8_0, 0.01);
  EXPECT_EQ(dst->find_tensor("token_embd.weight")->type, TensorType::Q8_0);
  EXPECT_EQ(dst->find_tensor("blk.0.ffn_down.weight")->type, TensorType::F16);
}

TEST_F(QuantizeCli, F32OutputKeepsF32ValuesExactly) {
  const std::string src_path = test::shared_path("models/stories260K/stories260K.gguf");
  ASSERT_EQ(quantize(src_path, out("f32.gguf"), "F32").exit_code, 0);
  const auto src = GgufFile::open(src_path);
  const auto dst = GgufFile::open(out("f32.gguf"));
  EXPECT_EQ(dst->metadata().get_int("general.file_type"), fixture_file_type("f32"));
  ASSERT_EQ(dst->tensors().size(), src->tensors().size());
  for (size_t i = 0; i < src->tensors().size(); ++i) {
    ASSERT_EQ(dst->tensors()[i].nbytes, src->tensors()[i].nbytes);
    EXPECT_EQ(std::memcmp(dst->tensors()[i].data, src->tensors()[i].data, src->tensors()[i].nbytes), 0);
  }
}

TEST_F(QuantizeCli, FileTypeNumbersMatchLlamaQuantize) {
  // TYPE -> the synth-tiny file llama-quantize wrote for the same type with --pure.
  const std::map<std::string, std::string> fixtures = {
      {"F16", "f16"},       {"BF16", "bf16"},     {"Q4_0", "q4_0"}, {"Q4_1", "q4_1"},
      {"Q5_0", "q5_0"},     {"Q5_1", "q5_1"},     {"Q2_K", "q2_k"}, {"Q3_K_S", "q3_k_s"},
      {"Q4_K_S", "q4_k_s"}, {"Q5_K_S", "q5_k_s"}, {"Q6_K", "q6_k"}};
  const auto src = open_model_file(test::shared_path("models/stories260K/stories260K.gguf"));
  for (const auto& [name, suffix] : fixtures) {
    SCOPED_TRACE(name);
    const std::string type = name.ends_with("_S") ? name.substr(0, name.size() - 2) : name;
    const auto r =
        quantize(test::shared_path("models/stories260K/stories260K.gguf"), out(suffix + ".gguf"), name);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto dst = GgufFile::open(out(suffix + ".gguf"));
    EXPECT_EQ(dst->metadata().get_int("general.file_type"), fixture_file_type(suffix));
    // 64-wide rows: every K type falls back to a 32-block type; Q4_0 (~9%) is the coarsest.
    expect_converted(*src, *dst, *tensor_type_from_name(type), 0.15);
  }
}

// The IQ / ternary / MXFP4 targets by llama.cpp's names, with llama.cpp's general.file_type
// numbers (llama_ftype: IQ4_NL 25, IQ4_XS 30, TQ1_0 36, TQ2_0 37, MXFP4_MOE 38); stories260K's
// rows of 64 make the 256-block types fall back (IQ4_XS -> IQ4_NL, TQ* -> Q4_0) as llama.cpp does.
TEST_F(QuantizeCli, IqTypesByLlamaCppNames) {
  const std::string src_path = test::shared_path("models/stories260K/stories260K.gguf");
  const auto src = open_model_file(src_path);
  const struct {
    const char* name;
    int64_t file_type;
    double tolerance;
  } cases[] = {{"iq4_nl", 25, 0.12},
               {"IQ4_XS", 30, 0.12},
               {"mxfp4", 38, 0.2},
               {"tq1_0", 36, 0.15},
               {"TQ2_0", 37, 0.15}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto r = quantize(src_path, out(std::string(c.name) + ".gguf"), c.name);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto dst = GgufFile::open(out(std::string(c.name) + ".gguf"));
    EXPECT_EQ(dst->metadata().get_int("general.file_type"), c.file_type);
    expect_converted(*src, *dst, *tensor_type_from_name(c.name), c.tolerance);
  }
  // The 1-2-bit IQ file types need an importance matrix, as in llama-quantize.
  for (const char* type : {"iq2_xxs", "IQ2_XS", "iq2_s", "IQ2_M", "iq1_s", "IQ1_M"}) {
    const auto r = quantize(src_path, out("iq2.gguf"), type);
    EXPECT_EQ(r.exit_code, 1) << type;
    EXPECT_EQ(r.err.rfind("strata: error: missing importance matrix for tensor '", 0), 0u) << r.err;
    EXPECT_FALSE(fs::exists(out("iq2.gguf"))) << type;
  }
}

TEST_F(QuantizeCli, Q4_KErrorComparableToLlamaQuantize) {
  // synth-tiny rows (256, 768) split into K blocks, so nothing falls back. llama-quantize's own
  // pure Q4_K file of the same weights sets the bar for the error.
  const std::string f32_path = test::shared_path("models/synth-tiny/synth-tiny-f32.gguf");
  const auto r = quantize(f32_path, out("q4k.gguf"), "Q4_K_S");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("do not fit"), std::string::npos) << r.err;
  const auto src = GgufFile::open(f32_path);
  const auto ours = GgufFile::open(out("q4k.gguf"));
  const auto theirs = GgufFile::open(test::shared_path("models/synth-tiny/synth-tiny-q4_k_s.gguf"));
  expect_converted(*src, *ours, TensorType::Q4_K, 0.2);
  for (const TensorInfo& t : src->tensors()) {
    if (t.n_dims != 2) continue;
    SCOPED_TRACE(t.name);
    const std::vector<float> ref = dequantized(t);
    const TensorInfo* llama = theirs->find_tensor(t.name);
    ASSERT_NE(llama, nullptr);
    ASSERT_EQ(llama->type, TensorType::Q4_K);
    EXPECT_LE(relative_error(dequantized(*ours->find_tensor(t.name)), ref),
              1.1 * relative_error(dequantized(*llama), ref));
  }
}

// Without --pure, a K-quant name is llama.cpp's mixture: the type of every tensor matches the
// file llama-quantize wrote for synth-tiny as Q4_K_M (Q6_K for output and some attn_v / ffn_down).
TEST_F(QuantizeCli, Q4_K_MMixtureMatchesLlamaQuantize) {
  const std::string f32_path = test::shared_path("models/synth-tiny/synth-tiny-f32.gguf");
  for (const char* name : {"Q4_K_M", "Q4_K"}) {  // Q4_K: llama-quantize's alias of Q4_K_M
    SCOPED_TRACE(name);
    const auto r = quantize(f32_path, out("q4km.gguf"), name, false);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto ours = GgufFile::open(out("q4km.gguf"));
    const auto theirs = GgufFile::open(test::shared_path("models/synth-tiny/synth-tiny-q4_k_m.gguf"));
    EXPECT_EQ(ours->metadata().get_int("general.file_type"), theirs->metadata().get_int("general.file_type"));
    ASSERT_EQ(ours->tensors().size(), theirs->tensors().size());
    int n_q6 = 0;
    for (const TensorInfo& t : theirs->tensors()) {
      SCOPED_TRACE(t.name);
      ASSERT_NE(ours->find_tensor(t.name), nullptr);
      EXPECT_EQ(ours->find_tensor(t.name)->type, t.type);
      n_q6 += t.type == TensorType::Q6_K;
    }
    EXPECT_GT(n_q6, 0);  // the fixture really is a mixture
  }
}

// The 1-3-bit IQ file types are llama.cpp's mixtures too (llama-quant.cpp, hand-applied to
// synth-tiny: 4 layers, no GQA >= 4, no experts, an untied output). IQ3_S: output Q6_K, the rest
// IQ3_S. IQ3_XXS: attn_q / attn_k IQ2_S, attn_output and token_embd IQ3_S, output Q5_K (and
// because IQ2_S needs an imatrix, llama-quantize refuses IQ3_XXS without one). IQ2_M (base
// IQ2_S): attn_v, attn_output and token_embd IQ3_S, output Q5_K.
TEST_F(QuantizeCli, IqMixturesFollowLlamaQuantize) {
  const std::string f32_path = test::shared_path("models/synth-tiny/synth-tiny-f32.gguf");
  const std::string calib = out("calib.txt");
  {
    std::FILE* f = std::fopen(calib.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("Once upon a time there was a little girl who liked to play in the park with her dog.", f);
    std::fclose(f);
  }
  const auto r = quantize(f32_path, out("iq.gguf"), "IQ3_XXS", false);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("missing importance matrix for tensor 'blk.0.attn_k.weight'"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(out("iq.gguf")));

  using T = TensorType;
  const struct {
    const char* name;
    int64_t file_type;
    bool imatrix;
    std::map<std::string, T> by_suffix;  // tensor name suffix -> type; the rest: base
    T base;
  } cases[] = {{"IQ3_S", 26, false, {{"output.weight", T::Q6_K}}, T::IQ3_S},
               {"IQ3_XXS",
                23,
                true,
                {{"attn_q.weight", T::IQ2_S},
                 {"attn_k.weight", T::IQ2_S},
                 {"attn_output.weight", T::IQ3_S},
                 {"token_embd.weight", T::IQ3_S},
                 {"output.weight", T::Q5_K}},
                T::IQ3_XXS},
               {"IQ2_M",
                29,
                true,
                {{"attn_v.weight", T::IQ3_S},
                 {"attn_output.weight", T::IQ3_S},
                 {"token_embd.weight", T::IQ3_S},
                 {"output.weight", T::Q5_K}},
                T::IQ2_S}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> argv = {
        test::strata_binary(), "quantize", f32_path, out("iq.gguf"), c.name, "-t", "2", "--no-summary"};
    if (c.imatrix)
      for (const char* a : {"--calib-file", calib.c_str(), "--calib-ctx", "16", "--calib-chunks", "1"})
        argv.push_back(a);
    const auto r = test::run_command(argv);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto f = GgufFile::open(out("iq.gguf"));
    EXPECT_EQ(f->metadata().get_int("general.file_type"), c.file_type);
    for (const TensorInfo& t : f->tensors()) {
      if (t.n_dims == 1) continue;
      SCOPED_TRACE(t.name);
      T want = c.base;
      for (const auto& [suffix, type] : c.by_suffix) {
        const std::string dotted = "." + suffix;
        if (t.name == suffix || (t.name.size() > dotted.size() &&
                                 t.name.compare(t.name.size() - dotted.size(), dotted.size(), dotted) == 0))
          want = type;
      }
      EXPECT_EQ(t.type, want);
    }
  }
}

TEST_F(QuantizeCli, QuantizedInputIsRequantizedOrCopied) {
  const std::string src_path = test::shared_path("models/synth-tiny/synth-tiny-q4_0.gguf");
  const auto src = GgufFile::open(src_path);
  ASSERT_EQ(quantize(src_path, out("same.gguf"), "Q4_0").exit_code, 0);
  const auto same = GgufFile::open(out("same.gguf"));
  for (size_t i = 0; i < src->tensors().size(); ++i) {
    const TensorInfo& s = src->tensors()[i];
    ASSERT_EQ(same->tensors()[i].nbytes, s.nbytes);
    EXPECT_EQ(std::memcmp(same->tensors()[i].data, s.data, s.nbytes), 0) << s.name;
  }
  ASSERT_EQ(quantize(src_path, out("q8.gguf"), "Q8_0").exit_code, 0);
  expect_converted(*src, *GgufFile::open(out("q8.gguf")), TensorType::Q8_0, 0.01);
}

TEST_F(QuantizeCli, HuggingFaceDirectoryToQ8_0) {
  const std::string dir = test::shared_path("models/tinystories656k");
  const auto r = quantize(dir, out("hf.gguf"), "Q8_0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto src = open_model_file(dir);
  const auto dst = GgufFile::open(out("hf.gguf"));
  expect_converted(*src, *dst, TensorType::Q8_0, 0.01);
  const Metadata& md = dst->metadata();
  // config.json: 2 layers, hidden 128, vocab 2048, rms_norm_eps 1e-6.
  EXPECT_EQ(md.string_or("general.architecture", ""), "llama");
  EXPECT_EQ(md.get_int("llama.block_count"), 2);
  EXPECT_EQ(md.get_int("llama.embedding_length"), 128);
  EXPECT_EQ(md.get_double("llama.attention.layer_norm_rms_epsilon"), static_cast<double>(1e-6f));
  ASSERT_NE(md.get_array("tokenizer.ggml.tokens"), nullptr);
  EXPECT_EQ(md.get_array("tokenizer.ggml.tokens")->size(), 2048u);
  EXPECT_EQ(md.get_int("general.file_type"), fixture_file_type("q8_0"));
  EXPECT_EQ(dst->find_tensor("output.weight"), nullptr);  // tied embeddings
}

TEST_F(QuantizeCli, Llama2cCheckpointToF16) {
  const std::string bin = test::shared_path("models/stories260K/stories260K.bin");
  const auto r = quantize(bin, out("l2c.gguf"), "f16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto src = open_model_file(bin);
  const auto dst = GgufFile::open(out("l2c.gguf"));
  expect_converted(*src, *dst, TensorType::F16, 1e-3);
  EXPECT_EQ(dst->metadata().get_int("general.file_type"), fixture_file_type("f16"));
  EXPECT_EQ(dst->metadata().get_array("tokenizer.ggml.tokens")->strings,
            src->metadata().get_array("tokenizer.ggml.tokens")->strings);
}

TEST_F(QuantizeCli, BadArgumentsFailCleanly) {
  const std::string src_path = test::shared_path("models/stories260K/stories260K.gguf");
  for (const auto& [in, type, expected] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {src_path, "q9_9", "strata: error: unknown quantization type 'q9_9'"},
           {src_path, "q8_k", "strata: error: unknown quantization type 'q8_k'"},
           {"/nonexistent/model.gguf", "q8_0",
            "strata: error: /nonexistent/model.gguf: no such file or directory"}}) {
    const auto r = quantize(in, out("bad.gguf"), type);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err.rfind(expected, 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(out("bad.gguf")));
  }
}

}  // namespace
}  // namespace strata
