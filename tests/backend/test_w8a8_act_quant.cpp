// W8A8 activation quantization (w8a8_kernels.h): the scalar reference against its definition
// (hand-derived ties, clamping, NaN/inf handling, and the round-to-nearest bound in float64),
// and every SIMD level bit-identical to it (quants, padding, sum and scale) over awkward sizes,
// unaligned inputs and outputs, dynamic and static scales.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backend/cpu/w8a8_kernels.h"
#include "core/cpu_features.h"
#include "test_kernels_util.h"

namespace strata::cpu {
namespace {

int64_t padded(int64_t n) {
  return (n + 3) / 4 * 4;
}

struct Quantized {
  std::vector<int8_t> q;  // [kp + guard]
  int32_t sum = 0;
  float scale = 0.0f;
};

constexpr size_t kGuard = 8;
constexpr int8_t kGuardByte = 0x5A;

// Runs fn on x with q at byte offset q_off; the guard bytes after q[kp] must stay untouched.
Quantized run(W8A8QuantizeFn fn, const float* x, int64_t n_in, int64_t kp, float static_absmax,
              size_t q_off) {
  std::vector<int8_t> buf(q_off + static_cast<size_t>(kp) + kGuard, kGuardByte);
  Quantized r;
  r.scale = fn(x, n_in, kp, static_absmax, buf.data() + q_off, &r.sum);
  r.q.assign(buf.begin() + static_cast<std::ptrdiff_t>(q_off), buf.end());
  for (size_t i = 0; i < kGuard; ++i)
    EXPECT_EQ(r.q[static_cast<size_t>(kp) + i], kGuardByte) << "guard " << i;
  return r;
}

TEST(W8A8ActQuant, ScalarTiesClampsAndBadValues) {
  // max |x| = 127 -> d = 1, 1 / d = 1: the quants are x rounded to nearest, ties to even.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {127.0f, 2.5f, 3.5f, -2.5f, -0.5f, 0.5f, 1.49f, -126.5f, nan, -0.0f};
  const std::vector<int> want = {127, 2, 4, -2, 0, 0, 1, -126, -127, 0};
  const Quantized r = run(w8a8_quantize_act_scalar, x.data(), 10, 12, 0.0f, 0);
  EXPECT_EQ(r.scale, 1.0f);  // the NaN does not set the scale
  int sum = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_EQ(r.q[k], want[k]) << k;
    sum += want[k];
  }
  EXPECT_EQ(r.q[10], 0);
  EXPECT_EQ(r.q[11], 0);
  EXPECT_EQ(r.sum, sum);

  // Static absmax 1: d = 1 / 127; values beyond +-1 clamp to +-127, +-inf too.
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> s = {3.0f, -40.0f, inf, -inf, 0.5f};
  const Quantized rs = run(w8a8_quantize_act_scalar, s.data(), 5, 8, 1.0f, 0);
  EXPECT_EQ(rs.scale, 1.0f / 127.0f);
  EXPECT_EQ(rs.q[0], 127);
  EXPECT_EQ(rs.q[1], -127);
  EXPECT_EQ(rs.q[2], 127);
  EXPECT_EQ(rs.q[3], -127);
  EXPECT_EQ(rs.q[4], static_cast<int8_t>(std::lround(0.5f * (1.0f / (1.0f / 127.0f)))));
  EXPECT_EQ(rs.sum, 127 - 127 + 127 - 127 + rs.q[4]);

  // All zeros: scale 0, quants 0.
  const std::vector<float> z(7, 0.0f);
  const Quantized rz = run(w8a8_quantize_act_scalar, z.data(), 7, 8, 0.0f, 0);
  EXPECT_EQ(rz.scale, 0.0f);
  EXPECT_EQ(rz.sum, 0);
  for (int k = 0; k < 8; ++k) EXPECT_EQ(rz.q[static_cast<size_t>(k)], 0);
}

TEST(W8A8ActQuant, ScalarWithinHalfAStepInFloat64) {
  for (int64_t n : {1, 33, 257}) {
    const auto x = testing::random_floats(static_cast<size_t>(n), static_cast<uint32_t>(n), 3.0f);
    const Quantized r = run(w8a8_quantize_act_scalar, x.data(), n, padded(n), 0.0f, 0);
    double amax = 0.0;
    for (float v : x) amax = std::max(amax, std::fabs(double{v}));
    EXPECT_NEAR(r.scale, amax / 127.0, amax / 127.0 * 1e-6);
    int64_t sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      const double q = r.q[static_cast<size_t>(k)];
      EXPECT_LE(std::fabs(q - double{x[static_cast<size_t>(k)]} / r.scale), 0.5 + 1e-4) << n << " " << k;
      sum += r.q[static_cast<size_t>(k)];
    }
    EXPECT_EQ(r.sum, sum);
  }
}

// Random activations with outliers, exact ties, NaN, +-inf, -0 and zeros sprinkled in.
std::vector<float> awkward_floats(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> kind(0, 40);
  std::vector<float> x(n);
  for (float& v : x) {
    switch (kind(gen)) {
      case 0:
        v = std::numeric_limits<float>::quiet_NaN();
        break;
      case 1:
        v = 50.0f * nd(gen);  // an outlier
        break;
      case 2:
        v = -0.0f;
        break;
      case 3:
        v = static_cast<float>(static_cast<int>(10 * nd(gen))) + 0.5f;  // a tie when d = 1
        break;
      default:
        v = nd(gen);
    }
  }
  return x;
}

TEST(W8A8ActQuant, EveryLevelBitIdenticalToScalar) {
  const int64_t sizes[] = {1, 3, 4, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 257, 1000, 2048, 5632};
  int checked = 0;
  for (IsaLevel isa : testing::arch_simd_levels()) {
    if (!isa_supported(isa)) continue;
    const W8A8QuantizeFn fn = w8a8_kernels(isa).quantize;
    for (int64_t n : sizes)
      for (size_t x_off : {size_t{0}, size_t{1}, size_t{3}})
        for (size_t q_off : {size_t{0}, size_t{1}, size_t{7}})
          for (float static_absmax : {0.0f, 1.5f})
            for (bool with_inf : {false, true}) {
              std::vector<float> buf =
                  awkward_floats(static_cast<size_t>(n) + x_off, static_cast<uint32_t>(n * 7 + x_off));
              if (with_inf) buf[x_off + static_cast<size_t>(n) / 2] = -std::numeric_limits<float>::infinity();
              // A tie at scale 1 for the dynamic case: max |x| = 127 unless an outlier or inf is larger.
              if (n > 2) buf[x_off + 1] = 127.0f;
              const float* x = buf.data() + x_off;
              for (int64_t kp : {padded(n), padded(n) + 8}) {
                const Quantized want = run(w8a8_quantize_act_scalar, x, n, kp, static_absmax, q_off);
                const Quantized got = run(fn, x, n, kp, static_absmax, q_off);
                const std::string what = isa_name(isa) + " n " + std::to_string(n) + " kp " +
                                         std::to_string(kp) + " x_off " + std::to_string(x_off) + " q_off " +
                                         std::to_string(q_off) + " static " + std::to_string(static_absmax) +
                                         " inf " + std::to_string(with_inf);
                ASSERT_EQ(std::memcmp(&want.scale, &got.scale, sizeof(float)), 0) << what;
                ASSERT_EQ(want.sum, got.sum) << what;
                ASSERT_EQ(std::memcmp(want.q.data(), got.q.data(), want.q.size()), 0) << what;
                ++checked;
              }
            }
  }
  if (checked == 0) GTEST_SKIP() << "no SIMD level on this CPU";
}

TEST(W8A8ActQuant, EveryLevelHasAQuantizer) {
  for (IsaLevel isa : testing::arch_isa_levels())
    EXPECT_NE(w8a8_kernels(isa).quantize, nullptr) << isa_name(isa);
}

}  // namespace
}  // namespace strata::cpu
