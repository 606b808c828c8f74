// quantize.h API: fallback types, float conversions, the activation formats (hand-derived
// values), importance weights and thread-pool splitting.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/thread_pool.h"
#include "quant/blocks.h"
#include "quant_test_util.h"

namespace strata::test {
namespace {

TEST(FallbackType, FollowsLlamaCpp) {
  // Fits: unchanged.
  EXPECT_EQ(fallback_type(TensorType::Q4_K, 512), TensorType::Q4_K);
  EXPECT_EQ(fallback_type(TensorType::Q4_0, 64), TensorType::Q4_0);
  EXPECT_EQ(fallback_type(TensorType::F16, 7), TensorType::F16);
  EXPECT_EQ(fallback_type(TensorType::BF16, 7), TensorType::BF16);
  EXPECT_EQ(fallback_type(TensorType::F32, 1), TensorType::F32);
  // K-quants and 256-block IQ types on rows of 32-multiples: llama.cpp's substitutes.
  EXPECT_EQ(fallback_type(TensorType::Q2_K, 96), TensorType::IQ4_NL);
  EXPECT_EQ(fallback_type(TensorType::Q3_K, 96), TensorType::IQ4_NL);
  EXPECT_EQ(fallback_type(TensorType::IQ4_XS, 96), TensorType::IQ4_NL);
  EXPECT_EQ(fallback_type(TensorType::IQ2_XXS, 96), TensorType::IQ4_NL);
  EXPECT_EQ(fallback_type(TensorType::IQ1_M, 96), TensorType::IQ4_NL);
  EXPECT_EQ(fallback_type(TensorType::TQ1_0, 96), TensorType::Q4_0);
  EXPECT_EQ(fallback_type(TensorType::TQ2_0, 96), TensorType::Q4_0);
  EXPECT_EQ(fallback_type(TensorType::IQ4_NL, 96), TensorType::IQ4_NL);
  EXPECT_EQ(fallback_type(TensorType::MXFP4, 40), TensorType::F16);
  EXPECT_EQ(fallback_type(TensorType::Q4_K, 96), TensorType::Q5_0);
  EXPECT_EQ(fallback_type(TensorType::Q5_K, 96), TensorType::Q5_1);
  EXPECT_EQ(fallback_type(TensorType::Q6_K, 96), TensorType::Q8_0);
  // Nothing quantized fits: F16.
  for (TensorType t : {TensorType::Q2_K, TensorType::Q4_K, TensorType::Q6_K, TensorType::Q4_0,
                       TensorType::Q5_1, TensorType::Q8_0})
    EXPECT_EQ(fallback_type(t, 100), TensorType::F16) << type_name(t);
}

TEST(FloatConversions, RoundToNearestEven) {
  const float x[] = {1.0f,
                     1.0f + std::ldexp(1.0f, -11),      // tie -> even (1.0)
                     1.0f + 3 * std::ldexp(1.0f, -11),  // tie -> even (1 + 2^-9)
                     65519.0f,                          // below the midpoint to 65536
                     65520.0f,                          // tie with 65536 -> even -> inf
                     -std::ldexp(1.0f, -25),            // tie between -0 and -2^-24 -> -0
                     3 * std::ldexp(1.0f, -26),         // nearer 2^-24
                     std::numeric_limits<float>::quiet_NaN()};
  fp16_t h[8];
  quantize_row(TensorType::F16, x, h, 8);
  EXPECT_EQ(h[0], 0x3C00);
  EXPECT_EQ(h[1], 0x3C00);
  EXPECT_EQ(h[2], 0x3C02);
  EXPECT_EQ(h[3], 0x7BFF);
  EXPECT_EQ(h[4], 0x7C00);
  EXPECT_EQ(h[5], 0x8000);
  EXPECT_EQ(h[6], 0x0001);
  EXPECT_EQ(h[7] & 0x7C00, 0x7C00);
  EXPECT_NE(h[7] & 0x03FF, 0);

  const float y[] = {1.0f, 1.0f + std::ldexp(1.0f, -8), 1.0f + 3 * std::ldexp(1.0f, -8),
                     std::numeric_limits<float>::quiet_NaN()};
  bf16_t b[4];
  quantize_row(TensorType::BF16, y, b, 4);
  EXPECT_EQ(b[0], 0x3F80);
  EXPECT_EQ(b[1], 0x3F80);
  EXPECT_EQ(b[2], 0x3F82);
  EXPECT_EQ(b[3] & 0x7F80, 0x7F80);
  EXPECT_NE(b[3] & 0x007F, 0);
}

TEST(ActivationFormats, Q8_KAsLlamaCpp) {
  // max = 2.5 -> iscale = -127 / 2.5 = -50.8, q = round(-50.8 x), d = 1 / iscale.
  std::vector<float> x(256, 0.0f);
  x[0] = 2.5f;    // -127
  x[1] = -1.0f;   // 50.8 -> 51
  x[2] = 0.1f;    // -5.08 -> -5
  x[3] = 0.3f;    // -15.24 -> -15
  x[4] = -2.0f;   // 101.6 -> 102
  x[255] = 0.5f;  // -25.4 -> -25
  BlockQ8_K b;
  quantize_row(TensorType::Q8_K, x.data(), &b, 256);
  EXPECT_NEAR(b.d, -2.5f / 127, 1e-8f);
  const int expected[] = {-127, 51, -5, -15, 102};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(b.qs[i], expected[i]) << i;
  for (int i = 5; i < 255; ++i) EXPECT_EQ(b.qs[i], 0) << i;
  EXPECT_EQ(b.qs[255], -25);
  EXPECT_EQ(b.bsums[0], -127 + 51 - 5 - 15 + 102);
  for (int g = 1; g < 15; ++g) EXPECT_EQ(b.bsums[g], 0);
  EXPECT_EQ(b.bsums[15], -25);
}

TEST(ActivationFormats, Q8_1AsLlamaCpp) {
  // amax = 1.27 -> d = 0.01, q = round(x / d), s = d * sum(q).
  std::vector<float> x(32, 0.0f);
  x[0] = 1.27f;
  x[1] = -0.6f;
  x[2] = 0.304f;
  x[31] = -0.006f;
  BlockQ8_1 b;
  quantize_row(TensorType::Q8_1, x.data(), &b, 32);
  EXPECT_EQ(b.qs[0], 127);
  EXPECT_EQ(b.qs[1], -60);
  EXPECT_EQ(b.qs[2], 30);
  EXPECT_EQ(b.qs[31], -1);
  EXPECT_EQ(b.d, f32_to_fp16(0.01f));
  EXPECT_EQ(b.s, f32_to_fp16(0.96f));
}

// Weighted error of a quantization made with the weights beats the unweighted one on the weighted
// metric; all-zero or invalid weights behave as no weights.
TEST(Importance, WeightsSteerTheSearch) {
  const std::vector<float> x = gaussian(1 << 13, 5);
  std::vector<float> w = gaussian(x.size(), 6);
  for (float& v : w) v = std::exp(2.0f * v);
  for (TensorType t : storage_types()) {
    if (!type_traits(t).quantized) continue;
    const auto plain = round_trip(t, x);
    const auto weighted = round_trip(t, x, w.data());
    const double e_plain = sq_error(plain.data(), x.data(), x.size(), w.data());
    const double e_weighted = sq_error(weighted.data(), x.data(), x.size(), w.data());
    EXPECT_LT(e_weighted, 0.97 * e_plain) << type_name(t);

    std::vector<float> bad(x.size(), 0.0f);
    bad[3] = std::numeric_limits<float>::quiet_NaN();
    bad[4] = -1.0f;
    bad[5] = std::numeric_limits<float>::infinity();
    const auto ignored = round_trip(t, x, bad.data());
    EXPECT_EQ(std::memcmp(ignored.data(), plain.data(), x.size() * sizeof(float)), 0) << type_name(t);
  }
}

TEST(QuantizeRows, PoolSplitMatchesRowByRow) {
  ThreadPool pool(3);
  const int64_t rows = 37, cols = 512;
  const std::vector<float> x = gaussian(rows * cols, 9);
  for (TensorType t : storage_types()) {
    const size_t rb = row_bytes(t, cols);
    std::vector<uint8_t> a(rb * rows), b(rb * rows);
    EXPECT_EQ(quantize_rows(t, x.data(), a.data(), rows, cols, nullptr, &pool), rb * rows);
    for (int64_t r = 0; r < rows; ++r)
      EXPECT_EQ(quantize_row(t, x.data() + r * cols, b.data() + r * rb, cols), rb);
    EXPECT_EQ(a, b) << type_name(t);
  }
}

}  // namespace
}  // namespace strata::test
