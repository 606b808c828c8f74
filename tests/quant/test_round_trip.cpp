// Quantize -> dequantize round trips on awkward input: zeros, constants, an outlier, denormals,
// huge values and non-finite values. Documented behaviour (quant/quantize.h): quantized types
// never produce inf/NaN; NaN is quantized as 0; +-inf and values beyond the reach of the fp16
// scales clamp to the largest magnitude the block represents; F16/BF16 keep IEEE semantics.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <string>

#include "quant_test_util.h"

namespace strata::test {
namespace {

// Quantized types, including the activation formats.
std::vector<TensorType> quantized_types() {
  return {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_1,   TensorType::Q5_0,  TensorType::Q5_1,
          TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K,   TensorType::Q5_K,  TensorType::Q6_K,
          TensorType::Q8_1, TensorType::Q8_K, TensorType::IQ4_NL, TensorType::IQ4_XS};
}

std::string name(TensorType t) {
  return std::string(type_name(t));
}

TEST(RoundTrip, ZerosStayExactlyZero) {
  const std::vector<float> x(1024, 0.0f);
  for (TensorType t : quantized_types()) {
    const auto y = round_trip(t, x);
    for (float v : y) ASSERT_EQ(v, 0.0f) << name(t);
  }
}

TEST(RoundTrip, ConstantRowsAreReproduced) {
  for (float c : {0.3f, -2.5f, 0.01f, 1000.0f, -7e-3f}) {
    const std::vector<float> x(512, c);
    for (TensorType t : quantized_types()) {
      const auto y = round_trip(t, x);
      // A constant needs one level and the scale: only the fp16 rounding of the scale remains.
      for (float v : y) ASSERT_NEAR(v, c, std::fabs(c) * std::ldexp(1.0, -9)) << name(t) << " c=" << c;
    }
    const auto h = round_trip(TensorType::BF16, x);
    for (float v : h) ASSERT_NEAR(v, c, std::fabs(c) * std::ldexp(1.0, -8)) << "bf16 c=" << c;
  }
}

TEST(RoundTrip, OutlierIsKeptAndOtherBlocksUnaffected) {
  std::vector<float> x = gaussian(1024, 7);
  const int at = 100;  // block 3 of 32, super-block 0 of 256
  x[at] = 1e4f;
  std::vector<float> ref = x;
  ref[at] = 0;
  for (TensorType t : quantized_types()) {
    const auto y = round_trip(t, x);
    for (float v : y) ASSERT_TRUE(std::isfinite(v)) << name(t);
    EXPECT_NEAR(y[at], 1e4f, 1e4f * 0.01f) << name(t);
    // Blocks without the outlier keep the error of the same data without it.
    const int64_t block = type_traits(t).block_size;
    const int64_t first_clean = (at / block + 1) * block;
    const auto clean = round_trip(t, ref);
    const size_t n = x.size() - first_clean;
    EXPECT_LE(sq_error(y.data() + first_clean, x.data() + first_clean, n),
              1.0001 * sq_error(clean.data() + first_clean, ref.data() + first_clean, n))
        << name(t);
  }
}

TEST(RoundTrip, DenormalsAndTinyValues) {
  std::vector<float> x(512);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = (i % 3 ? 1.0f : -1.0f) * std::ldexp(1.0f, -130 - static_cast<int>(i % 15));
  for (TensorType t : quantized_types()) {
    const auto y = round_trip(t, x);
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_TRUE(std::isfinite(y[i])) << name(t);
      ASSERT_LE(std::fabs(y[i] - x[i]), 1e-38f) << name(t) << " " << i;
    }
  }
  // Tiny normal values push the fp16 scales into their subnormal range: coarse, still bounded.
  const std::vector<float> small = gaussian(512, 3, 1e-6f);
  for (TensorType t : quantized_types()) {
    const auto y = round_trip(t, small);
    const float amax = std::fabs(*std::max_element(
        small.begin(), small.end(), [](float a, float b) { return std::fabs(a) < std::fabs(b); }));
    for (size_t i = 0; i < small.size(); ++i) ASSERT_LE(std::fabs(y[i] - small[i]), 2 * amax) << name(t);
    // Storage types still carry some signal; Q8_1 follows llama.cpp, whose scale amax / 127
    // (3e-8 here) rounds to a zero half and flushes the block.
    const double err = sq_error(y.data(), small.data(), small.size()),
                 signal = sum_sq(small.data(), small.size());
    // IQ4_NL / IQ4_XS: their levels reach +-127 d, so scales of this data lie below the smallest
    // fp16 subnormal; the quantizer then keeps the better of that subnormal and an all-zero block.
    if (t == TensorType::Q8_1 || t == TensorType::IQ4_NL || t == TensorType::IQ4_XS)
      EXPECT_LE(err, signal) << name(t);
    else
      EXPECT_LT(err, 0.5 * signal) << name(t);
  }
}

TEST(RoundTrip, NonFiniteAndHugeValuesClampInQuantizedTypes) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = gaussian(1024, 11);
  x[5] = std::numeric_limits<float>::quiet_NaN();
  x[40] = inf;
  x[300] = -inf;
  x[700] = 1e30f;
  x[900] = -FLT_MAX;
  for (TensorType t : quantized_types()) {
    const auto y = round_trip(t, x);
    for (size_t i = 0; i < y.size(); ++i) ASSERT_TRUE(std::isfinite(y[i])) << name(t) << " " << i;
    EXPECT_LE(std::fabs(y[5]), 4.0f) << name(t);  // NaN -> 0, within the range of its block
    for (int i : {40, 700}) EXPECT_GT(y[i], 1e4f) << name(t) << " " << i;
    for (int i : {300, 900}) EXPECT_LT(y[i], -1e4f) << name(t) << " " << i;
    // The clamped value is the largest magnitude of its block.
    for (int i : {40, 300, 700, 900}) {
      const int64_t b = type_traits(t).block_size, first = i / b * b;
      for (int64_t k = first; k < first + b; ++k)
        EXPECT_LE(std::fabs(y[k]), std::fabs(y[i])) << name(t) << " " << i;
    }
  }
}

TEST(RoundTrip, NonFiniteKeepIeeeSemanticsInFloatTypes) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {
      std::numeric_limits<float>::quiet_NaN(), inf, -inf, 1e30f, 1.0f, -0.0f, 3e-42f, 2.0f};
  for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
    const auto y = round_trip(t, x);
    EXPECT_TRUE(std::isnan(y[0])) << name(t);
    EXPECT_EQ(y[1], inf) << name(t);
    EXPECT_EQ(y[2], -inf) << name(t);
    EXPECT_EQ(y[4], 1.0f) << name(t);
    EXPECT_TRUE(y[5] == 0 && std::signbit(y[5])) << name(t);
  }
  EXPECT_EQ(round_trip(TensorType::F16, x)[3], inf);  // beyond 65504: IEEE overflow
  EXPECT_EQ(round_trip(TensorType::F16, x)[6], 0.0f);
  EXPECT_NEAR(round_trip(TensorType::BF16, x)[3], 1e30f, 1e30f * 0.004f);
}

TEST(RoundTrip, ErrorOfGaussianDataIsBelowPlainRounding) {
  // Same expected errors of a plain round-to-nearest quantizer as in test_llama_files.cpp; the
  // searches must do better than that on fresh data.
  const std::vector<float> x = gaussian(1 << 15, 21);
  const struct {
    TensorType type;
    double naive;
  } cases[] = {{TensorType::Q8_0, 2.347 / 127}, {TensorType::Q4_0, 2.347 / 8},
               {TensorType::Q5_0, 2.347 / 16},  {TensorType::Q4_1, 4.139 / 15},
               {TensorType::Q5_1, 4.139 / 31},  {TensorType::Q2_K, 3.532 / 3},
               {TensorType::Q3_K, 2.077 / 4},   {TensorType::Q4_K, 4.139 / 15},
               {TensorType::Q5_K, 4.139 / 31},  {TensorType::Q6_K, 2.077 / 32}};
  for (const auto& c : cases) {
    const auto y = round_trip(c.type, x);
    const double rel = std::sqrt(sq_error(y.data(), x.data(), x.size()) / sum_sq(x.data(), x.size()));
    const double naive = c.naive / std::sqrt(12.0);
    EXPECT_LT(rel, naive) << name(c.type);
    EXPECT_GT(rel, 0.5 * naive) << name(c.type);
  }
}

}  // namespace
}  // namespace strata::test
