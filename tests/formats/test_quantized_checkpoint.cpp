// GPTQ / AWQ checkpoints: tinystories656k quantized and packed by the test's own writer
// (quantized_checkpoint_writer.h) loads as GGUF matrices whose values are the formats'
// documented scale * (q - zero) of the packed integers: bit-exact for Q4_0 / Q8_0 / the F16
// fallback, within the f16 rounding of m for Q4_1; each block carries the checkpoint's scale
// and integers unchanged. Hostile checkpoints are one strata::Error naming the problem.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/fixtures.h"
#include "core/check.h"
#include "format_test_util.h"
#include "formats/model_file.h"
#include "quant/blocks.h"
#include "quant/quantize.h"
#include "quantized_checkpoint_writer.h"

namespace strata {
namespace {

const std::string kTiny = "models/tinystories656k";
constexpr int64_t kHeadDim = 16;  // tinystories656k: hidden 128 / 8 heads

// "model.layers.L.self_attn.q_proj" -> "blk.L.attn_q.weight"
std::string gguf_name(const std::string& prefix) {
  static const std::pair<const char*, const char*> kMap[] = {
      {"self_attn.q_proj", "attn_q"},      {"self_attn.k_proj", "attn_k"}, {"self_attn.v_proj", "attn_v"},
      {"self_attn.o_proj", "attn_output"}, {"mlp.gate_proj", "ffn_gate"},  {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"}};
  const size_t layer_end = prefix.find('.', 13);
  const std::string layer = prefix.substr(13, layer_end - 13), rest = prefix.substr(layer_end + 1);
  for (const auto& [hf, gg] : kMap)
    if (rest == hf) return "blk." + layer + "." + gg + ".weight";
  ADD_FAILURE() << prefix;
  return "";
}

// GGUF row r of a q/k matrix is HF row (head, j * head_dim / 2 + i) for r = head * head_dim + 2i + j
// (llama.cpp's converter permutation); other matrices keep their rows.
int64_t hf_row(const std::string& name, int64_t r) {
  if (name.find("attn_q") == std::string::npos && name.find("attn_k") == std::string::npos) return r;
  const int64_t head = r / kHeadDim, within = r % kHeadDim;
  return head * kHeadDim + (within % 2) * (kHeadDim / 2) + within / 2;
}

struct Case {
  const char* label;
  test::QuantScheme scheme;
  TensorType expect;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.label;
}

class QuantizedCheckpointLoad : public ::testing::TestWithParam<Case> {};

// Each block of a Q4_0 / Q4_1 / Q8_0 row: d is the group's scale bits, the integers are the
// packed ones in Q4_0's nibble order, Q4_1's m is f16(-scale * zero).
void check_blocks(const TensorInfo& t, const test::QuantizedMatrix& m, int64_t r) {
  const int64_t o = hf_row(t.name, r);
  const size_t rb = row_bytes(t.type, t.ne[0]);
  const uint8_t* row = static_cast<const uint8_t*>(t.data) + static_cast<size_t>(r) * rb;
  for (int64_t b = 0; b < t.ne[0] / kQK; ++b) {
    const int64_t i0 = b * kQK;
    const int32_t g = m.g_idx[static_cast<size_t>(i0)];
    const uint16_t scale = m.scale[static_cast<size_t>(g * m.n_out + o)];
    if (t.type == TensorType::Q8_0) {
      BlockQ8_0 blk;
      std::memcpy(&blk, row + b * sizeof(blk), sizeof(blk));
      ASSERT_EQ(blk.d, scale);
      for (int j = 0; j < kQK; ++j) ASSERT_EQ(blk.qs[j], m.q_at(o, i0 + j) - 128);
      continue;
    }
    const size_t size = t.type == TensorType::Q4_0 ? sizeof(BlockQ4_0) : sizeof(BlockQ4_1);
    uint16_t d, mm = 0;
    const uint8_t* blk = row + b * size;
    std::memcpy(&d, blk, 2);
    ASSERT_EQ(d, scale);
    if (t.type == TensorType::Q4_1) {
      std::memcpy(&mm, blk + 2, 2);
      ASSERT_EQ(mm, f32_to_fp16(-(m.scale_at(g, o) * static_cast<float>(m.zero_at(g, o)))));
    }
    const uint8_t* qs = blk + (t.type == TensorType::Q4_0 ? 2 : 4);
    for (int j = 0; j < kQK / 2; ++j) {
      ASSERT_EQ(qs[j] & 15, m.q_at(o, i0 + j));
      ASSERT_EQ(qs[j] >> 4, m.q_at(o, i0 + j + kQK / 2));
    }
  }
}

TEST_P(QuantizedCheckpointLoad, ValuesAreTheDocumentedDequantization) {
  const Case& c = GetParam();
  test::TempDir dir;
  const auto mats = test::write_quantized_checkpoint(test::shared_path(kTiny), dir.path(), c.scheme);
  ASSERT_EQ(mats.size(), 14u);
  const auto f = open_model_file(dir.path());
  for (const auto& [prefix, m] : mats) {
    const TensorInfo* t = f->find_tensor(gguf_name(prefix));
    ASSERT_NE(t, nullptr) << prefix;
    SCOPED_TRACE(t->name);
    ASSERT_EQ(t->type, c.expect);
    ASSERT_EQ(t->ne, (std::array<int64_t, 4>{m.n_in, m.n_out, 1, 1}));
    ASSERT_EQ(t->nbytes, row_bytes(t->type, m.n_in) * static_cast<size_t>(m.n_out));
    std::vector<float> row(static_cast<size_t>(m.n_in));
    for (int64_t r = 0; r < m.n_out; ++r) {
      const int64_t o = hf_row(t->name, r);
      dequantize_row(t->type, static_cast<const uint8_t*>(t->data) + r * row_bytes(t->type, m.n_in),
                     row.data(), m.n_in);
      for (int64_t i = 0; i < m.n_in; ++i) {
        const float want = m.value(o, i), got = row[static_cast<size_t>(i)];
        if (t->type == TensorType::Q4_1) {
          const int32_t g = m.g_idx[static_cast<size_t>(i)];
          const float tol = std::fabs(m.scale_at(g, o) * static_cast<float>(m.zero_at(g, o))) * 0x1p-11f +
                            std::fabs(want) * 0x1p-22f;
          ASSERT_LE(std::fabs(got - want), tol) << "row " << r << " col " << i;
        } else if (t->type == TensorType::F16) {
          ASSERT_EQ(f32_to_fp16(got), f32_to_fp16(want)) << "row " << r << " col " << i;
        } else {
          ASSERT_EQ(got, want) << "row " << r << " col " << i;
        }
      }
      if (t->type != TensorType::F16) check_blocks(*t, m, r);
    }
  }
  // Everything else is the F32 source, unchanged.
  const auto src = open_model_file(test::shared_path(kTiny));
  for (const char* n : {"token_embd.weight", "blk.1.attn_norm.weight", "output_norm.weight"}) {
    const TensorInfo *a = f->find_tensor(n), *b = src->find_tensor(n);
    ASSERT_TRUE(a && b) << n;
    EXPECT_EQ(a->type, TensorType::F32);
    EXPECT_EQ(std::memcmp(a->data, b->data, b->nbytes), 0) << n;
  }
}

test::QuantScheme scheme(const char* method, int bits, int64_t group, bool sym, bool act_order = false,
                         bool v2 = false) {
  return {method, bits, group, sym, act_order, v2};
}

INSTANTIATE_TEST_SUITE_P(
    Schemes, QuantizedCheckpointLoad,
    ::testing::Values(Case{"gptq4_sym_g128", scheme("gptq", 4, 128, true), TensorType::Q4_0},
                      Case{"gptq4_asym_g32", scheme("gptq", 4, 32, false), TensorType::Q4_1},
                      Case{"gptq4_asym_g64_v2", scheme("gptq", 4, 64, false, false, true), TensorType::Q4_1},
                      Case{"gptq4_asym_per_column", scheme("gptq", 4, -1, false), TensorType::Q4_1},
                      Case{"gptq8_sym_g128", scheme("gptq", 8, 128, true), TensorType::Q8_0},
                      Case{"gptq8_sym_g32_v2", scheme("gptq", 8, 32, true, false, true), TensorType::Q8_0},
                      Case{"gptq8_asym_g64", scheme("gptq", 8, 64, false), TensorType::F16},
                      Case{"gptq4_act_order_g32", scheme("gptq", 4, 32, true, true), TensorType::F16},
                      Case{"awq4_asym_g128", scheme("awq", 4, 128, false), TensorType::Q4_1},
                      Case{"awq4_sym_g64", scheme("awq", 4, 64, true), TensorType::Q4_0}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.label); });

// --- hostile checkpoints ---

using Entries = std::vector<test::SafetensorsEntry>;
const std::string kQ = "model.layers.0.self_attn.q_proj";

test::SafetensorsEntry* entry(Entries& e, const std::string& name) {
  for (auto& x : e)
    if (x.name == name) return &x;
  ADD_FAILURE() << "no " << name;
  return &e.front();
}

void expect_error(const std::string& dir, const std::string& needle) {
  try {
    open_model_file(dir);
    ADD_FAILURE() << "no error, expected '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

void expect_tensor_error(const test::QuantScheme& s, const std::function<void(Entries&)>& edit,
                         const std::string& needle) {
  test::TempDir dir;
  test::write_quantized_checkpoint(test::shared_path(kTiny), dir.path(), s, edit);
  expect_error(dir.path(), needle);
}

void expect_config_error(const nlohmann::json& quantization_config, const std::string& needle) {
  test::TempDir dir;
  test::write_quantized_checkpoint(test::shared_path(kTiny), dir.path(), scheme("gptq", 4, 128, false));
  nlohmann::json config = nlohmann::json::parse(test::read_file(dir.file("config.json")));
  config["quantization_config"] = quantization_config;
  test::write_bytes(dir.file("config.json"), config.dump());
  expect_error(dir.path(), needle);
}

TEST(QuantizedCheckpointHostile, UnsupportedConfigsNameTheField) {
  const auto gptq = [](const char* key, nlohmann::json v) {
    nlohmann::json q = test::quantization_config(scheme("gptq", 4, 128, false));
    q[key] = std::move(v);
    return q;
  };
  expect_config_error(gptq("bits", 3), "quantization_config.bits = 3");
  expect_config_error(gptq("bits", 2), "quantization_config.bits = 2");
  expect_config_error(gptq("bits", "4"), "quantization_config.bits must be an integer");
  expect_config_error(gptq("quant_method", "bitsandbytes"), "quant_method = 'bitsandbytes'");
  expect_config_error(gptq("checkpoint_format", "marlin"), "checkpoint_format = 'marlin'");
  expect_config_error(gptq("group_size", 0), "group_size = 0");
  expect_config_error(gptq("group_size", 100), "group_size 100 does not divide the");
  expect_config_error(gptq("pack_dtype", "int16"), "pack_dtype = 'int16'");
  nlohmann::json awq = test::quantization_config(scheme("awq", 4, 128, false));
  awq["version"] = "gemv";
  expect_config_error(awq, "version = 'gemv'");
  awq["version"] = "gemm";
  awq["bits"] = 8;
  expect_config_error(awq, "bits = 8 is not supported for awq");
  expect_config_error(nlohmann::json::array(), "\"quantization_config\" must be an object");
}

TEST(QuantizedCheckpointHostile, BadTensorsAreErrors) {
  const auto gptq = scheme("gptq", 4, 32, false);
  expect_tensor_error(
      gptq, [](Entries& e) { std::erase_if(e, [](const auto& x) { return x.name == kQ + ".qzeros"; }); },
      "lacks its qzeros tensor");
  expect_tensor_error(
      gptq, [](Entries& e) { std::erase_if(e, [](const auto& x) { return x.name == kQ + ".qweight"; }); },
      "has no '" + kQ + ".qweight'");
  expect_tensor_error(
      gptq, [](Entries& e) { entry(e, kQ + ".scales")->dtype = "BF16"; },
      "scales has dtype BF16, expected F16");
  expect_tensor_error(
      gptq, [](Entries& e) { entry(e, kQ + ".qweight")->dtype = "F32"; },
      "qweight has dtype F32, expected I32");
  expect_tensor_error(
      gptq,
      [](Entries& e) {  // 4 groups of 32 -> claimed [2, 256]: same bytes, wrong shape
        entry(e, kQ + ".scales")->shape = {2, 256};
      },
      "scales has shape [2, 256], expected [4, 128]");
  expect_tensor_error(
      gptq,
      [](Entries& e) {
        entry(e, kQ + ".qzeros")->shape = {8, 8};
      },
      "qzeros has shape [8, 8]");
  expect_tensor_error(
      gptq,
      [](Entries& e) {
        auto* g = entry(e, kQ + ".g_idx");
        const int32_t bad = 4;  // 4 groups: 0..3
        std::memcpy(g->bytes.data() + 4 * 17, &bad, 4);
      },
      "g_idx[17] = 4 is outside the 4 groups");
  expect_tensor_error(
      gptq,
      [](Entries& e) {
        auto* g = entry(e, kQ + ".g_idx");
        const int32_t bad = -1;
        std::memcpy(g->bytes.data(), &bad, 4);
      },
      "g_idx[0] = -1");
  expect_tensor_error(
      gptq,
      [](Entries& e) { entry(e, kQ + ".g_idx")->shape = {64}, entry(e, kQ + ".g_idx")->bytes.resize(256); },
      "g_idx has shape [64], expected [128]");
  expect_tensor_error(
      scheme("gptq", 4, 32, false, true),
      [](Entries& e) { std::erase_if(e, [](const auto& x) { return x.name == kQ + ".g_idx"; }); },
      "desc_act is set but there is no g_idx tensor");
  // Huge dims claimed by a header whose other dim is 0 (so the byte count still matches).
  expect_tensor_error(
      gptq,
      [](Entries& e) {
        auto* q = entry(e, kQ + ".qweight");
        q->shape = {int64_t{1} << 40, 0};
        q->bytes.clear();
      },
      "qweight has shape [1099511627776, 0]");
  expect_tensor_error(
      gptq,
      [](Entries& e) {
        auto* q = entry(e, kQ + ".qweight");
        q->shape = {0, int64_t{1} << 40};
        q->bytes.clear();
      },
      "dims must be in [1, 2^31");
  // AWQ: output count must split into words of 8 columns.
  expect_tensor_error(
      scheme("awq", 4, 128, false),
      [](Entries& e) {
        entry(e, kQ + ".qweight")->shape = {256, 8};
      },
      "scales has shape [1, 128], expected [2, 64]");
}

// Scales whose values (and Q4_1's m) exceed F16's range: the matrix falls back to F32, exact.
TEST(QuantizedCheckpointLoad, ValuesBeyondF16AreF32) {
  test::TempDir dir;
  const uint16_t f16_max = 0x7bff;  // 65504
  auto mats = test::write_quantized_checkpoint(test::shared_path(kTiny), dir.path(),
                                               scheme("gptq", 4, 32, false), [&](Entries& e) {
                                                 std::string& b = entry(e, kQ + ".scales")->bytes;
                                                 for (size_t i = 0; i + 1 < b.size(); i += 2)
                                                   std::memcpy(&b[i], &f16_max, 2);
                                               });
  test::QuantizedMatrix& m = mats.at(kQ);
  std::fill(m.scale.begin(), m.scale.end(), f16_max);
  const auto f = open_model_file(dir.path());
  const TensorInfo* t = f->find_tensor("blk.0.attn_q.weight");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->type, TensorType::F32);
  const float* v = static_cast<const float*>(t->data);
  for (int64_t r = 0; r < m.n_out; ++r)
    for (int64_t i = 0; i < m.n_in; ++i)
      ASSERT_EQ(v[r * m.n_in + i], m.value(hf_row(t->name, r), i)) << r << " " << i;
  EXPECT_EQ(f->find_tensor("blk.0.attn_k.weight")->type, TensorType::Q4_1);
}

TEST(QuantizedCheckpointHostile, PackedTensorsWithoutAConfigAreUnexpected) {
  test::TempDir dir;
  test::write_quantized_checkpoint(test::shared_path(kTiny), dir.path(), scheme("gptq", 4, 128, false));
  nlohmann::json config = nlohmann::json::parse(test::read_file(dir.file("config.json")));
  config.erase("quantization_config");
  test::write_bytes(dir.file("config.json"), config.dump());
  expect_error(dir.path(), "unexpected tensor 'model.layers.0.mlp.down_proj.");
}

}  // namespace
}  // namespace strata
