// The scalar reference kernels against independent references: hand-derived activation
// quantizations and the double-precision dot product of rows decoded by quant/quantize.h's
// dequantize_row.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/kernels.h"
#include "quant/blocks.h"
#include "test_kernels_util.h"

namespace strata::cpu {
namespace {

using testing::accumulation_terms;
using testing::dot_tolerance;
using testing::fill_random_rows;
using testing::random_floats;
using testing::ref_dot_rows;

// amax = 127 gives d = 1 exactly, so q = round(x) with ties to even, derived by hand.
TEST(ActivationQuantizer, Q8_0RoundsTiesToEvenWithUnitScale) {
  std::vector<float> x(32, 0.0f);
  const float in[] = {127.0f, -127.0f, 2.5f, 3.5f, -2.5f, 0.5f, 1.5f, -0.49f, 126.6f, -1.5f};
  const int8_t want[] = {127, -127, 2, 4, -2, 0, 2, 0, 127, -2};
  std::memcpy(x.data(), in, sizeof in);
  for (IsaLevel isa : supported_isa_levels()) {
    BlockQ8_0 b;
    type_kernels(TensorType::Q8_0, isa).from_float(x.data(), &b, 32);
    EXPECT_EQ(b.d, 0x3c00) << "d must be fp16 1.0";
    for (size_t j = 0; j < std::size(want); ++j) EXPECT_EQ(b.qs[j], want[j]) << "element " << j;
    for (size_t j = std::size(want); j < 32; ++j) EXPECT_EQ(b.qs[j], 0);
  }
}

TEST(ActivationQuantizer, Q8_1StoresScaledSum) {
  // amax 254 -> d = 2; q = x / 2 rounded: 127, -3 (from -6), 5 (from 10.2 -> 5.1) -> sum 129.
  std::vector<float> x(64, 0.0f);
  x[0] = 254.0f, x[1] = -6.0f, x[2] = 10.2f;
  x[32] = -1.0f;  // second block: amax 1, d = 1/127, q = -127
  BlockQ8_1 b[2];
  quantize_row_q8_1_scalar(x.data(), b, 64);
  EXPECT_EQ(fp16_to_f32(b[0].d), 2.0f);
  EXPECT_EQ(b[0].qs[0], 127);
  EXPECT_EQ(b[0].qs[1], -3);
  EXPECT_EQ(b[0].qs[2], 5);
  EXPECT_EQ(fp16_to_f32(b[0].s), 258.0f);  // 2 * 129
  EXPECT_EQ(b[1].qs[0], -127);
  EXPECT_EQ(b[1].s, f32_to_fp16(-1.0f));  // (1/127) * -127 = -1 up to fp16 rounding
}

TEST(ActivationQuantizer, ZeroBlockHasZeroScale) {
  std::vector<float> x(32, 0.0f);
  BlockQ8_0 b;
  std::memset(&b, 0x55, sizeof b);
  quantize_row_q8_0_scalar(x.data(), &b, 32);
  EXPECT_EQ(b.d, 0);
  for (int8_t q : b.qs) EXPECT_EQ(q, 0);
}

// Reconstruction error of every element is at most half a step (plus d's own fp16 rounding).
TEST(ActivationQuantizer, Q8_0ErrorIsHalfAStep) {
  const std::vector<float> x = random_floats(32 * 64, 3, 10.0f);
  std::vector<BlockQ8_0> b(64);
  quantize_row_q8_0_scalar(x.data(), b.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const float d = fp16_to_f32(b[i / 32].d);
    const float q = b[i / 32].qs[i % 32];
    EXPECT_LE(std::fabs(x[i] - d * q), 0.5f * d + std::fabs(q) * d * 1e-3f) << i;
  }
}

TEST(ActivationConverter, HalfAndBfloatValuesDerivedByHand) {
  const float x[] = {1.0f, 65504.0f, 1.0f / 3.0f, 1.00390625f, 1.01171875f, -2.0f};
  const uint16_t want_f16[] = {0x3c00, 0x7bff, 0x3555, 0x3c04, 0x3c0c, 0xc000};
  // bf16: 65504 = 0x477fe000 rounds up to 0x4780 (65536); 1/3 = 0x3eaaaaab rounds up;
  // 1 + 2^-8 is a tie -> even (0x3f80); 1 + 3 * 2^-8 is a tie -> even (0x3f82).
  const uint16_t want_bf16[] = {0x3f80, 0x4780, 0x3eab, 0x3f80, 0x3f82, 0xc000};
  for (IsaLevel isa : supported_isa_levels()) {
    uint16_t h[6], b[6];
    type_kernels(TensorType::F16, isa).from_float(x, h, 6);
    type_kernels(TensorType::BF16, isa).from_float(x, b, 6);
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(h[i], want_f16[i]) << isa_name(isa) << " f16 " << i;
      EXPECT_EQ(b[i], want_bf16[i]) << isa_name(isa) << " bf16 " << i;
    }
  }
}

class ScalarDot : public ::testing::TestWithParam<TensorType> {};

TEST_P(ScalarDot, MatchesDoubleDotOfDequantizedRows) {
  const TensorType wt = GetParam();
  const TypeKernels& k = type_kernels(wt, IsaLevel::Scalar);
  for (int64_t blocks : {1, 2, 31, 33, 257}) {
    const int64_t n = blocks * (testing::is_float_type(wt) ? 1 : 32);
    std::vector<uint8_t> w(row_bytes(wt, n)), a(row_bytes(k.vec_dot_type, n));
    fill_random_rows(wt, n, 1, 0, w.data(), 40 + static_cast<uint32_t>(n));
    const std::vector<float> x = random_floats(static_cast<size_t>(n), 41);
    k.from_float(x.data(), a.data(), n);
    const auto exact = ref_dot_rows(wt, w.data(), k.vec_dot_type, a.data(), n);
    EXPECT_NEAR(k.vec_dot(n, w.data(), a.data()), exact.value,
                dot_tolerance(accumulation_terms(wt, n), exact.abs_sum))
        << "n=" << n;
  }
}

// A hand-built block: Q4_0 with d = 0.5, all nibbles 9 (value 0.5 * (9 - 8) = 0.5), against
// activations of 1.0 (q = 127, d = 1/127): 32 * 0.5 * 1.0 = 16 up to the fp16 rounding of 1/127.
TEST(ScalarDotHandBuilt, Q4_0OnesTimesHalf) {
  BlockQ4_0 w;
  w.d = f32_to_fp16(0.5f);
  std::memset(w.qs, 0x99, sizeof w.qs);
  std::vector<float> x(32, 1.0f);
  BlockQ8_0 a;
  quantize_row_q8_0_scalar(x.data(), &a, 32);
  const float expect = 32.0f * 0.5f * 127.0f * fp16_to_f32(a.d);
  EXPECT_FLOAT_EQ(type_kernels(TensorType::Q4_0, IsaLevel::Scalar).vec_dot(32, &w, &a), expect);
  EXPECT_NEAR(expect, 16.0f, 16.0f * 1e-3f);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, ScalarDot, ::testing::ValuesIn(testing::legacy_and_float_types()),
                         [](const auto& info) { return std::string(type_name(info.param)); });

}  // namespace
}  // namespace strata::cpu
