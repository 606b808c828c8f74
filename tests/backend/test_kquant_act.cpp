// The Q8_K activation quantizer (act_q8_k*.cpp): hand-derived blocks for llama.cpp's sign and
// rounding convention, agreement with the quantization engine's independent Q8_K codec,
// the reconstruction bound |x - d * q| <= |d| / 2, bsums, hostile input, and the SIMD versions
// bit-identical to the scalar reference over awkward sizes and misaligned pointers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/kernels.h"
#include "core/cpu_features.h"
#include "quant/blocks.h"
#include "quant/quantize.h"

namespace strata::cpu {
namespace {

using QuantizeFn = void (*)(const float*, void*, int64_t);

// The Q8_K quantizer each supported SIMD level uses (the K-quants' activation format).
struct Level {
  std::string name;
  QuantizeFn fn;
};

std::vector<Level> simd_levels() {
  std::vector<Level> out;
  for (IsaLevel isa : supported_isa_levels())
    if (isa != IsaLevel::Scalar)
      out.push_back({isa_name(isa), type_kernels(TensorType::Q4_K, isa).from_float});
  return out;
}

std::vector<BlockQ8_K> quantize(QuantizeFn fn, const std::vector<float>& x) {
  std::vector<BlockQ8_K> out(x.size() / kQK_K);
  fn(x.data(), out.data(), static_cast<int64_t>(x.size()));
  return out;
}

void expect_bsums_consistent(const BlockQ8_K& b) {
  for (int g = 0; g < kQK_K / 16; ++g) {
    int sum = 0;
    for (int l = 0; l < 16; ++l) sum += b.qs[16 * g + l];
    EXPECT_EQ(b.bsums[g], sum) << "group " << g;
  }
}

// x[j] = (j % 255) - 127: the first element of largest magnitude is x[0] = -127, so
// iscale = -127 / -127 = 1, q = x exactly and d = 1.
TEST(KQuantAct, HandDerivedNegativeMax) {
  std::vector<float> x(kQK_K);
  for (int j = 0; j < kQK_K; ++j) x[j] = static_cast<float>(j % 255 - 127);
  const BlockQ8_K b = quantize(quantize_row_q8_k_scalar, x)[0];
  EXPECT_EQ(b.d, 1.0f);
  for (int j = 0; j < kQK_K; ++j) ASSERT_EQ(b.qs[j], j % 255 - 127) << j;
  expect_bsums_consistent(b);
  EXPECT_EQ(b.bsums[0], -127 * 16 + 120);  // sum of -127..-112
}

// llama.cpp's sign convention: a positive largest element maps to -127 and d is negative.
TEST(KQuantAct, HandDerivedPositiveMaxGivesNegativeScale) {
  std::vector<float> x(kQK_K, 0.0f);
  x[3] = 1.984375f;    // 127 / 64: largest magnitude, positive -> iscale = -64
  x[4] = -0.9921875f;  // -63.5 / 64 -> 63.5, a tie
  x[5] = 0.015625f;    // 1 / 64 -> -1
  const BlockQ8_K b = quantize(quantize_row_q8_k_scalar, x)[0];
  EXPECT_EQ(b.d, -0.015625f);
  EXPECT_EQ(b.qs[3], -127);
  EXPECT_EQ(b.qs[4], 64);  // 63.5 rounds half to even
  EXPECT_EQ(b.qs[5], -1);
  EXPECT_EQ(b.qs[0], 0);
  expect_bsums_consistent(b);
}

// Ties round to even (nearbyint), not away from zero, and the first of +max / -max wins.
TEST(KQuantAct, TiesToEvenAndFirstMaxWins) {
  std::vector<float> x(kQK_K, 0.0f);
  x[0] = -127.0f;  // iscale = 1
  x[1] = 127.0f;   // same magnitude later: does not change the sign
  x[2] = 2.5f;
  x[3] = 3.5f;
  x[4] = -2.5f;
  x[5] = 0.5f;
  const BlockQ8_K b = quantize(quantize_row_q8_k_scalar, x)[0];
  EXPECT_EQ(b.d, 1.0f);
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[1], 127);
  EXPECT_EQ(b.qs[2], 2);
  EXPECT_EQ(b.qs[3], 4);
  EXPECT_EQ(b.qs[4], -2);
  EXPECT_EQ(b.qs[5], 0);
}

// The quantization engine's Q8_K codec (quant/q8_k.cpp) follows the same llama.cpp definition
// independently: byte-identical blocks on ordinary data.
TEST(KQuantAct, MatchesQuantizationEngineCodec) {
  std::mt19937_64 rng(11);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  for (int nb : {1, 3, 17}) {
    std::vector<float> x(nb * kQK_K);
    for (auto& v : x) v = gauss(rng) * 3.0f;
    const std::vector<BlockQ8_K> ours = quantize(quantize_row_q8_k_scalar, x);
    std::vector<BlockQ8_K> theirs(nb);
    quantize_row(TensorType::Q8_K, x.data(), theirs.data(), nb * kQK_K);
    ASSERT_EQ(std::memcmp(ours.data(), theirs.data(), nb * sizeof(BlockQ8_K)), 0) << nb << " blocks";
  }
}

// |x - d * q| <= |d| / 2 (plus the float rounding of iscale * x) and bsums are the group sums.
TEST(KQuantAct, ReconstructionWithinHalfStep) {
  std::mt19937_64 rng(3);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  for (float scale : {1e-20f, 1e-3f, 1.0f, 1e5f, 1e30f}) {
    std::vector<float> x(5 * kQK_K);
    for (auto& v : x) v = gauss(rng) * scale;
    const std::vector<BlockQ8_K> q = quantize(quantize_row_q8_k_scalar, x);
    for (size_t i = 0; i < x.size(); ++i) {
      const BlockQ8_K& b = q[i / kQK_K];
      const double step = std::fabs(static_cast<double>(b.d));
      ASSERT_GT(step, 0.0);
      ASSERT_LE(std::fabs(x[i] - static_cast<double>(b.d) * b.qs[i % kQK_K]), step * (0.5 + 1e-5))
          << "scale " << scale << " element " << i;
    }
    for (const BlockQ8_K& b : q) expect_bsums_consistent(b);
  }
}

TEST(KQuantAct, HostileInput) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  // Block 0: all zero. Block 1: all NaN. Block 2: one NaN among ordinary values. Block 3: +inf.
  // Block 4: magnitudes below kQ8KMinAmax.
  std::vector<float> x(5 * kQK_K, 0.0f);
  for (int j = 0; j < kQK_K; ++j) {
    x[kQK_K + j] = nan;
    x[2 * kQK_K + j] = static_cast<float>(j % 7) - 3.0f;
    x[3 * kQK_K + j] = 1.0f;
    x[4 * kQK_K + j] = 1e-35f * static_cast<float>(j % 3);
  }
  x[2 * kQK_K + 10] = nan;
  x[3 * kQK_K + 20] = inf;
  const std::vector<BlockQ8_K> q = quantize(quantize_row_q8_k_scalar, x);
  for (int b : {0, 1, 4}) {
    EXPECT_EQ(q[b].d, 0.0f) << b;
    for (int j = 0; j < kQK_K; ++j) ASSERT_EQ(q[b].qs[j], 0) << b;
    for (int g = 0; g < 16; ++g) ASSERT_EQ(q[b].bsums[g], 0) << b;
  }
  EXPECT_FLOAT_EQ(q[2].d, 3.0f / 127.0f);  // largest magnitude: the first -3, iscale = 127 / 3
  EXPECT_EQ(q[2].qs[10], 0);               // the NaN
  EXPECT_EQ(q[2].qs[0], -127);
  EXPECT_EQ(q[2].qs[6], 127);
  expect_bsums_consistent(q[2]);
  EXPECT_FALSE(std::isfinite(q[3].d));  // inf stays visible downstream
  expect_bsums_consistent(q[3]);
}

// Random blocks, some with extreme magnitudes, special values and exact ties.
std::vector<float> awkward_input(int64_t nb, std::mt19937_64& rng) {
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  static const float kScales[] = {1e-30f, 1e-20f, 1e-3f, 1.0f, 1e4f, 1e30f};
  std::vector<float> x(nb * kQK_K);
  for (int64_t b = 0; b < nb; ++b) {
    float* xb = x.data() + b * kQK_K;
    const float scale = kScales[rng() % 6];
    for (int j = 0; j < kQK_K; ++j) xb[j] = gauss(rng) * scale;
    switch (rng() % 6) {
      case 0:  // +max and -max both present
        xb[rng() % kQK_K] = 10 * scale;
        xb[rng() % kQK_K] = -10 * scale;
        break;
      case 1:  // exact ties: max 127 gives iscale = -1
        for (int j = 0; j < kQK_K; ++j)
          xb[j] = static_cast<float>(static_cast<int>(rng() % 200) - 100) + 0.5f;
        xb[rng() % kQK_K] = 127.0f;
        break;
      case 2:
        xb[rng() % kQK_K] = std::numeric_limits<float>::quiet_NaN();
        break;
      case 3:
        std::fill(xb, xb + kQK_K, 0.0f);
        break;
      case 4:
        xb[rng() % kQK_K] = (rng() % 2 ? 1 : -1) * std::numeric_limits<float>::infinity();
        break;
      default:
        break;
    }
  }
  return x;
}

TEST(KQuantAct, SimdBitIdenticalToScalar) {
  std::mt19937_64 rng(17);
  for (const Level& level : simd_levels()) {
    for (int64_t nb : {1, 2, 3, 5, 17}) {
      for (int trial = 0; trial < 6; ++trial) {
        const std::vector<float> x = awkward_input(nb, rng);
        const size_t bytes = nb * sizeof(BlockQ8_K);
        std::vector<uint8_t> want(bytes);
        quantize_row_q8_k_scalar(x.data(), want.data(), nb * kQK_K);
        // Misalign the input by 0..3 floats and the output by 0..3 bytes.
        const int x_off = trial % 4, y_off = (trial + 1) % 4;
        std::vector<float> xs(x.size() + 4);
        std::memcpy(xs.data() + x_off, x.data(), x.size() * sizeof(float));
        std::vector<uint8_t> got(bytes + 8, 0xAB);
        level.fn(xs.data() + x_off, got.data() + y_off, nb * kQK_K);
        // NaN d (inf block) compares by bytes, which is what we want.
        ASSERT_EQ(std::memcmp(got.data() + y_off, want.data(), bytes), 0)
            << level.name << " blocks " << nb << " trial " << trial;
        EXPECT_EQ(got[y_off + bytes], 0xAB) << "wrote past the row";
      }
    }
  }
}

}  // namespace
}  // namespace strata::cpu
