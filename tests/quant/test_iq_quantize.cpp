// Quantizers of IQ4_NL, IQ4_XS, MXFP4, TQ1_0 and TQ2_0: quantize -> dequantize error bounds on
// Gaussian data against independent yardsticks (plain rounding of the same bit budget, Q4_0 and
// Q4_K at the same size), exact reproduction of data the format represents; importance
// weighting and awkward input for those and the 1-3-bit IQ types (whose search is tested
// against an exhaustive one in test_iq_lattice_quantize.cpp).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

#include "core/check.h"
#include "quant_test_util.h"

namespace strata::test {
namespace {

const TensorType kQuantizable[] = {TensorType::IQ4_NL,  TensorType::IQ4_XS, TensorType::MXFP4,
                                   TensorType::TQ1_0,   TensorType::TQ2_0,  TensorType::IQ3_S,
                                   TensorType::IQ3_XXS, TensorType::IQ2_XS, TensorType::IQ2_XXS,
                                   TensorType::IQ2_S,   TensorType::IQ1_S,  TensorType::IQ1_M};

double rel_rms(const std::vector<float>& x, const std::vector<float>& y) {
  return std::sqrt(sq_error(y.data(), x.data(), x.size()) / sum_sq(x.data(), x.size()));
}

TEST(IqQuantize, GaussianErrorBounds) {
  const std::vector<float> x = gaussian(1 << 15, 31);
  const double q4_0 = rel_rms(x, round_trip(TensorType::Q4_0, x));
  const double q4_k = rel_rms(x, round_trip(TensorType::Q4_K, x));
  // IQ4_NL (4.5 bpw) and IQ4_XS (4.25 bpw) beat Q4_0 (4.5 bpw); IQ4_XS is close to Q4_K (4.5).
  EXPECT_LT(rel_rms(x, round_trip(TensorType::IQ4_NL, x)), q4_0);
  EXPECT_LT(rel_rms(x, round_trip(TensorType::IQ4_XS, x)), q4_0);
  EXPECT_LT(rel_rms(x, round_trip(TensorType::IQ4_XS, x)), 1.1 * q4_k);
  // MXFP4 (4.25 bpw, power-of-two scales, E2M1 levels): within 1.5x Q4_0.
  const double mx = rel_rms(x, round_trip(TensorType::MXFP4, x));
  EXPECT_LT(mx, 1.5 * q4_0);
  EXPECT_GT(mx, 0.5 * q4_0);
  // Ternary on Gaussian data: the optimal 3-level (Lloyd-Max) quantizer of N(0, 1) has mean
  // squared error 0.1902, relative RMS 0.436; per-block scales can only get close to it.
  for (TensorType t : {TensorType::TQ1_0, TensorType::TQ2_0}) {
    const double e = rel_rms(x, round_trip(t, x));
    EXPECT_LT(e, 0.48) << type_name(t);
    EXPECT_GT(e, 0.40) << type_name(t);
  }
}

TEST(IqQuantize, RepresentableDataIsReproduced) {
  // Ternary values times a power of two survive TQ1_0 / TQ2_0 exactly; IQ4_NL levels times a
  // power of two survive IQ4_NL; fp4 levels times a power of two survive MXFP4.
  const int iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  const int fp4[8] = {0, 1, 2, 3, 4, 6, 8, 12};
  std::vector<float> tern(512), nl(512), mx(512);
  for (size_t i = 0; i < 512; ++i) {
    tern[i] = 0.25f * static_cast<float>(static_cast<int>((i * 7 + i / 3) % 3) - 1);
    nl[i] = 0.125f * static_cast<float>(iq4nl[(i * 5 + i / 7) % 16]);
    mx[i] = 0.5f * static_cast<float>(fp4[(i * 3) % 8]) * (i % 5 ? 1.0f : -1.0f);
  }
  tern[0] = 0.25f, nl[0] = 0.125f * -127, mx[0] = 6.0f;  // each block reaches its top level
  for (size_t b = 32; b < 512; b += 32) nl[b] = 0.125f * -127, mx[b] = 6.0f;
  for (TensorType t : {TensorType::TQ1_0, TensorType::TQ2_0})
    EXPECT_EQ(round_trip(t, tern), tern) << type_name(t);
  EXPECT_EQ(round_trip(TensorType::IQ4_NL, nl), nl);
  EXPECT_EQ(round_trip(TensorType::MXFP4, mx), mx);
}

TEST(IqQuantize, ImportanceLowersTheWeightedError) {
  const std::vector<float> x = gaussian(4096, 5);
  std::vector<float> w(4096);
  for (size_t i = 0; i < w.size(); ++i) w[i] = i % 7 == 0 ? 50.0f : 0.1f;
  for (TensorType t : kQuantizable) {
    const auto plain = round_trip(t, x), weighted = round_trip(t, x, w.data());
    EXPECT_LT(sq_error(weighted.data(), x.data(), x.size(), w.data()),
              sq_error(plain.data(), x.data(), x.size(), w.data()))
        << type_name(t);
  }
}

TEST(IqQuantize, AwkwardInputStaysFinite) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = gaussian(1024, 11);
  x[5] = std::numeric_limits<float>::quiet_NaN();
  x[40] = inf;
  x[300] = -inf;
  x[700] = 1e30f;
  x[900] = -FLT_MAX;
  for (TensorType t : kQuantizable) {
    const auto y = round_trip(t, x);
    for (size_t i = 0; i < y.size(); ++i) ASSERT_TRUE(std::isfinite(y[i])) << type_name(t) << " " << i;
    for (int i : {40, 700}) EXPECT_GT(y[i], 1e4f) << type_name(t) << " " << i;
    for (int i : {300, 900}) EXPECT_LT(y[i], -1e4f) << type_name(t) << " " << i;
    const auto z = round_trip(t, std::vector<float>(512, 0.0f));
    for (float v : z) ASSERT_EQ(v, 0.0f) << type_name(t);
    const auto tiny = round_trip(t, std::vector<float>(512, 1e-40f));
    for (float v : tiny) ASSERT_TRUE(std::isfinite(v) && std::fabs(v) < 1e-30f) << type_name(t);
  }
}

TEST(IqQuantize, EveryTypeQuantizesAndLlamaCppsImatrixTypesAreMarked) {
  for (TensorType t : kQuantizable) EXPECT_TRUE(can_quantize(t)) << type_name(t);
  // llama-quantize refuses these without an imatrix (llama-quant.cpp); the row API still works.
  for (TensorType t :
       {TensorType::IQ2_XXS, TensorType::IQ2_XS, TensorType::IQ2_S, TensorType::IQ1_S, TensorType::IQ1_M})
    EXPECT_TRUE(quantize_requires_imatrix(t)) << type_name(t);
  for (TensorType t : {TensorType::IQ3_S, TensorType::IQ3_XXS, TensorType::IQ4_XS, TensorType::Q2_K})
    EXPECT_FALSE(quantize_requires_imatrix(t)) << type_name(t);
}

}  // namespace
}  // namespace strata::test
