// Decoding the synth-tiny tensors llama.cpp quantized: our dequantization of its files must
// reproduce the f32 originals with the error a correct decoder gives for each type. A wrong bit
// layout (level order, nibble/bit-pair placement, scale packing) scrambles the values and gives
// errors of the order of the weights themselves.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

#include "quant/blocks.h"
#include "quant_test_util.h"

namespace strata::test {
namespace {

class LlamaFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { f32_ = GgufFile::open(synth_tiny_path("f32")).release(); }
  static void TearDownTestSuite() {
    delete f32_;
    f32_ = nullptr;
  }
  static const float* original(const TensorInfo& t) {
    const TensorInfo* o = f32_->find_tensor(t.name);
    EXPECT_NE(o, nullptr) << t.name;
    EXPECT_EQ(o->type, TensorType::F32);
    EXPECT_EQ(o->n_elements(), t.n_elements());
    return static_cast<const float*>(o->data);
  }
  static GgufFile* f32_;
};
GgufFile* LlamaFiles::f32_ = nullptr;

// F16 and BF16 files are llama.cpp's round-to-nearest-even conversions of the f32 file: our
// conversion must produce the very same bytes, and our decoding the exact half/bfloat values.
TEST_F(LlamaFiles, FloatConversionsAreBitExact) {
  for (const char* suffix : {"f16", "bf16"}) {
    const auto file = GgufFile::open(synth_tiny_path(suffix));
    int checked = 0;
    for (const TensorInfo& t : file->tensors()) {
      if (t.type != TensorType::F16 && t.type != TensorType::BF16) continue;
      const float* x = original(t);
      const int64_t n = t.n_elements();
      std::vector<uint8_t> ours(row_bytes(t.type, n));
      quantize_row(t.type, x, ours.data(), n);
      ASSERT_EQ(std::memcmp(ours.data(), t.data, ours.size()), 0) << suffix << " " << t.name;
      const std::vector<float> y = decode_tensor(t);
      const double rel = t.type == TensorType::F16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
      for (int64_t i = 0; i < n; ++i)  // half an ulp, plus the subnormal spacing of halves
        ASSERT_LE(std::fabs(y[i] - x[i]), rel * std::fabs(x[i]) + std::ldexp(1.0, -25)) << t.name << " " << i;
      ++checked;
    }
    EXPECT_GT(checked, 20) << suffix;
  }
}

// Relative RMS error a plain round-to-nearest quantizer gives on Gaussian weights (the synth-tiny
// weights are Gaussian: kurtosis 3.0): step / sqrt(12) / sigma, with the step set by the expected
// block maximum |x| (2.077 sigma for 16 samples, 2.347 for 32) or range (3.532, 4.139), computed
// by numerical integration of the normal distribution's order statistics.
double naive_relative_rms(TensorType type) {
  const double s12 = std::sqrt(12.0);
  switch (type) {
    case TensorType::Q8_0:
      return 2.347 / 127 / s12;
    case TensorType::Q4_0:
      return 2.347 / 8 / s12;
    case TensorType::Q5_0:
      return 2.347 / 16 / s12;
    case TensorType::Q4_1:
      return 4.139 / 15 / s12;
    case TensorType::Q5_1:
      return 4.139 / 31 / s12;
    case TensorType::Q2_K:
      return 3.532 / 3 / s12;
    case TensorType::Q3_K:
      return 2.077 / 4 / s12;
    case TensorType::Q4_K:
      return 4.139 / 15 / s12;
    case TensorType::Q5_K:
      return 4.139 / 31 / s12;
    case TensorType::Q6_K:
      return 2.077 / 32 / s12;
    default:
      return 0;
  }
}

TEST_F(LlamaFiles, DecodedErrorIsTheExpectedQuantizationError) {
  std::map<TensorType, std::pair<double, double>> sums;  // type -> (sum err^2, sum x^2)
  for (const SynthFile& f : synth_files()) {
    const auto file = GgufFile::open(synth_tiny_path(f.suffix));
    for (const TensorInfo& t : file->tensors()) {
      if (!type_traits(t.type).quantized) continue;
      const float* x = original(t);
      const std::vector<float> y = decode_tensor(t);
      const size_t n = y.size();
      const double err = sq_error(y.data(), x, n), norm = sum_sq(x, n);
      const double rel = std::sqrt(err / norm), expected = naive_relative_rms(t.type);
      // Per tensor: a scrambled layout gives a relative error near or above 1.
      EXPECT_LT(rel, 1.2 * expected) << f.suffix << " " << t.name << " " << type_name(t.type);
      EXPECT_GT(rel, 0.6 * expected) << f.suffix << " " << t.name << " " << type_name(t.type);
      sums[t.type].first += err;
      sums[t.type].second += norm;
    }
  }
  EXPECT_EQ(sums.size(), 10u);  // every quantized storage type appears
  for (const auto& [type, s] : sums)
    std::printf("  llama.cpp %-5s decoded: relative RMS error %.5f (plain round-to-nearest %.5f)\n",
                std::string(type_name(type)).c_str(), std::sqrt(s.first / s.second),
                naive_relative_rms(type));
}

// llama.cpp's legacy quantizers round every element to the nearest level of the block's scale
// (its reference algorithm, no search), so each decoded element must lie within half a step of
// the original, plus the fp16 rounding of the stored scale/offset. Only the top level of Q4_0 and
// Q5_0 can be clamped (an element of opposite sign to the block maximum, of nearly equal
// magnitude): there the error may reach a whole step.
struct LegacyBlock {
  float d, m;  // decoded scale and offset (m = 0 for the symmetric types)
  int top;     // largest level (clamped), or a value never reached
  int nmax;    // largest |level| used to bound the scale's rounding error
};

LegacyBlock legacy_block(TensorType type, const uint8_t* block) {
  fp16_t d, m = 0;
  std::memcpy(&d, block, 2);
  if (type == TensorType::Q4_1 || type == TensorType::Q5_1) std::memcpy(&m, block + 2, 2);
  switch (type) {
    case TensorType::Q4_0:
      return {fp16_to_f32(d), 0, 7, 8};
    case TensorType::Q5_0:
      return {fp16_to_f32(d), 0, 15, 16};
    case TensorType::Q8_0:
      return {fp16_to_f32(d), 0, 1000, 127};
    case TensorType::Q4_1:
      return {fp16_to_f32(d), fp16_to_f32(m), 1000, 15};
    default:
      return {fp16_to_f32(d), fp16_to_f32(m), 1000, 31};
  }
}

TEST_F(LlamaFiles, LegacyTypesDecodeWithinHalfAStep) {
  for (const char* suffix : {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0"}) {
    const auto file = GgufFile::open(synth_tiny_path(suffix));
    int64_t checked = 0;
    for (const TensorInfo& t : file->tensors()) {
      if (!type_traits(t.type).quantized || t.type == TensorType::Q6_K) continue;
      const float* x = original(t);
      const std::vector<float> y = decode_tensor(t);
      const TypeTraits& tr = type_traits(t.type);
      for (int64_t b = 0; b < t.n_elements() / 32; ++b) {
        const LegacyBlock lb = legacy_block(t.type, static_cast<const uint8_t*>(t.data) + b * tr.block_bytes);
        const double step = std::fabs(lb.d);
        const double scale_rounding =
            lb.nmax * step * std::ldexp(1.0, -11) + std::fabs(lb.m) * std::ldexp(1.0, -11);
        for (int64_t i = b * 32; i < b * 32 + 32; ++i) {
          const int level = lb.d != 0 ? static_cast<int>(std::lround((y[i] - lb.m) / lb.d)) : 0;
          const double half_steps = level == lb.top ? 1.0 : 0.5;
          ASSERT_LE(std::fabs(y[i] - x[i]), half_steps * step * 1.001 + scale_rounding + 1e-12)
              << suffix << " " << t.name << " element " << i;
          ++checked;
        }
      }
    }
    EXPECT_GT(checked, 1000000) << suffix;
  }
}

// K-quants: llama.cpp rounds each element to the nearest level of its sub-block's quantized scale,
// clamping only at the ends of the level range, so nearly every element lies within half a
// sub-block step of the original. The step comes from the raw block (super-block scale times the
// unpacked 4/6/8-bit sub-block scale), checking the scale packing and the level layout together.
double kquant_step(TensorType type, const uint8_t* block, int e) {
  switch (type) {
    case TensorType::Q2_K: {
      const auto* b = reinterpret_cast<const BlockQ2_K*>(block);
      return fp16_to_f32(b->d) * (b->scales[e / 16] & 0xF);
    }
    case TensorType::Q3_K: {
      const auto* b = reinterpret_cast<const BlockQ3_K*>(block);
      int8_t sc[16];
      unpack_q3_k_scales(b->scales, sc);
      return std::fabs(fp16_to_f32(b->d) * sc[e / 16]);
    }
    case TensorType::Q4_K:
    case TensorType::Q5_K: {
      fp16_t d;
      std::memcpy(&d, block, 2);
      const uint8_t* scales = block + 4;  // after d and dmin in both layouts
      uint8_t sc, m;
      unpack_k4_scale_min(scales, e / 32, &sc, &m);
      return fp16_to_f32(d) * sc;
    }
    default: {
      const auto* b = reinterpret_cast<const BlockQ6_K*>(block);
      return std::fabs(fp16_to_f32(b->d) * b->scales[e / 16]);
    }
  }
}

TEST_F(LlamaFiles, KQuantsDecodeWithinHalfASubBlockStep) {
  std::map<TensorType, std::pair<int64_t, int64_t>> counts;  // type -> (within, total)
  for (const SynthFile& f : synth_files()) {
    if (f.type == TensorType::F16 || f.type == TensorType::BF16) continue;
    const auto file = GgufFile::open(synth_tiny_path(f.suffix));
    for (const TensorInfo& t : file->tensors()) {
      if (t.type < TensorType::Q2_K || t.type > TensorType::Q6_K) continue;
      const float* x = original(t);
      const std::vector<float> y = decode_tensor(t);
      const size_t bytes = type_traits(t.type).block_bytes;
      for (int64_t b = 0; b < t.n_elements() / kQK_K; ++b) {
        const uint8_t* block = static_cast<const uint8_t*>(t.data) + b * bytes;
        for (int e = 0; e < kQK_K; ++e) {
          const int64_t i = b * kQK_K + e;
          const double step = kquant_step(t.type, block, e);
          counts[t.type].first += std::fabs(y[i] - x[i]) <= 0.5 * step * 1.001 + 1e-6 * std::fabs(x[i]);
          ++counts[t.type].second;
        }
      }
    }
  }
  ASSERT_EQ(counts.size(), 5u);
  for (const auto& [type, c] : counts) {
    const double frac = static_cast<double>(c.first) / c.second;
    std::printf("  llama.cpp %-5s: %.4f of elements within half a sub-block step\n",
                std::string(type_name(type)).c_str(), frac);
    EXPECT_GT(frac, 0.97) << type_name(type);
  }
}

}  // namespace
}  // namespace strata::test
