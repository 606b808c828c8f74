// The element-wise kernels of vector_ops.h at every ISA level against double-precision formulas
// (GELU-tanh as in Hendrycks & Gimpel 2016, gpt-oss's clamped SwiGLU from its model card,
// gemma2's soft-capping), over awkward sizes and unaligned pointers.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend/cpu/fast_math.h"
#include "backend/cpu/vector_ops.h"

namespace strata::cpu {
namespace {

std::vector<IsaLevel> levels() {
  std::vector<IsaLevel> out = {IsaLevel::Scalar};
  if (isa_supported(IsaLevel::Avx2)) out.push_back(IsaLevel::Avx2);
  if (isa_supported(IsaLevel::Avx512)) out.push_back(IsaLevel::Avx512);
  return out;
}

std::vector<float> random_vec(size_t n, uint32_t seed, float scale) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

double gelu_tanh(double g) {
  return 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g)));
}

double swiglu_oai(double g, double u) {
  g = std::min(g, 7.0);
  u = std::min(7.0, std::max(-7.0, u));
  return g / (1.0 + std::exp(-1.702 * g)) * (u + 1.0);
}

const int64_t kSizes[] = {1, 7, 31, 33, 257, 1000};

TEST(FastMath, ApproximationsAgainstLibm) {
  for (float x = -90.0f; x <= 90.0f; x += 0.0137f) {
    const double e = std::exp(double{std::min(88.0f, std::max(-87.0f, x))});
    ASSERT_NEAR(fast_exp(x), e, 3e-7 * e) << x;
    ASSERT_NEAR(fast_tanh(x), std::tanh(double{x}), 4e-7) << x;
    ASSERT_NEAR(fast_sigmoid(x), 1.0 / (1.0 + std::exp(-double{x})), 4e-7) << x;
  }
  // Near 0 tanh keeps its relative accuracy (the series branch).
  for (float x : {1e-6f, -3e-4f, 0.01f, -0.06f})
    EXPECT_NEAR(fast_tanh(x), std::tanh(double{x}), 1e-6 * std::fabs(x)) << x;
}

TEST(VectorOps, GatedActivations) {
  for (IsaLevel isa : levels()) {
    const VectorKernels& k = vector_kernels(isa);
    for (int64_t n : kSizes) {
      SCOPED_TRACE(std::string(isa_name(isa)) + " n=" + std::to_string(n));
      // Offsets of one float make every pointer unaligned for vector loads.
      const auto g = random_vec(n + 1, 1, 3.0f), u = random_vec(n + 1, 2, 4.0f);
      std::vector<float> out(n + 1, -1.0f);
      k.glu_gelu_tanh(g.data() + 1, u.data() + 1, out.data() + 1, n);
      for (int64_t i = 0; i < n; ++i) {
        const double ref = gelu_tanh(g[i + 1]) * u[i + 1];
        ASSERT_NEAR(out[i + 1], ref, 1e-6 * (1 + std::fabs(ref))) << i;
      }
      EXPECT_EQ(out[0], -1.0f);  // nothing before the output
      k.glu_swiglu_oai(g.data() + 1, u.data() + 1, out.data() + 1, n, 1.702f, 7.0f);
      for (int64_t i = 0; i < n; ++i) {
        const double ref = swiglu_oai(g[i + 1], u[i + 1]);
        ASSERT_NEAR(out[i + 1], ref, 1e-6 * (1 + std::fabs(ref))) << i;
      }
    }
  }
}

TEST(VectorOps, SwigluOaiClampsBothInputs) {
  // Values beyond the limit of 7: the gate is clamped from above only, the up input both ways.
  const float g[] = {10.0f, -10.0f, 7.0f, 3.0f}, u[] = {-20.0f, 20.0f, 0.5f, 9.0f};
  for (IsaLevel isa : levels()) {
    float out[4];
    vector_kernels(isa).glu_swiglu_oai(g, u, out, 4, 1.702f, 7.0f);
    for (int i = 0; i < 4; ++i)
      EXPECT_NEAR(out[i], swiglu_oai(g[i], u[i]), 1e-5) << isa_name(isa) << " " << i;
    EXPECT_NEAR(out[0], 7.0 / (1.0 + std::exp(-1.702 * 7.0)) * (-6.0), 1e-5);
  }
}

TEST(VectorOps, SoftcapAndScale) {
  for (IsaLevel isa : levels()) {
    const VectorKernels& k = vector_kernels(isa);
    for (int64_t n : kSizes) {
      SCOPED_TRACE(std::string(isa_name(isa)) + " n=" + std::to_string(n));
      const auto x0 = random_vec(n + 1, 3, 40.0f);
      auto x = x0;
      k.softcap(x.data() + 1, n, 30.0f);
      for (int64_t i = 0; i < n; ++i) {
        const double ref = 30.0 * std::tanh(x0[i + 1] / 30.0);
        ASSERT_NEAR(x[i + 1], ref, 2e-6 * 30.0) << i;
        ASSERT_LE(std::fabs(x[i + 1]), 30.0f);
      }
      EXPECT_EQ(x[0], x0[0]);
      x = x0;
      k.scale(x.data() + 1, n, 16.0f);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(x[i + 1], x0[i + 1] * 16.0f);
    }
  }
}

TEST(VectorOps, WeightedSumOfSlots) {
  for (IsaLevel isa : levels()) {
    const VectorKernels& k = vector_kernels(isa);
    for (int64_t n : kSizes)
      for (int slots : {1, 2, 3, 8}) {
        SCOPED_TRACE(std::string(isa_name(isa)) + " n=" + std::to_string(n) +
                     " slots=" + std::to_string(slots));
        const int64_t stride = n + 3;  // rows further apart than their width
        const auto y = random_vec(static_cast<size_t>(stride * slots + 1), 4, 1.0f);
        const auto w = random_vec(static_cast<size_t>(slots), 5, 1.0f);
        std::vector<float> out(n + 1, 0.0f);
        k.weighted_sum_row(y.data() + 1, stride, w.data(), slots, out.data() + 1, n);
        for (int64_t i = 0; i < n; ++i) {
          double ref = 0.0, mag = 0.0;
          for (int s = 0; s < slots; ++s) {
            ref += double{w[s]} * y[static_cast<size_t>(1 + s * stride + i)];
            mag += std::fabs(double{w[s]} * y[static_cast<size_t>(1 + s * stride + i)]);
          }
          ASSERT_NEAR(out[i + 1], ref, 4e-7 * slots * (mag + 1e-30)) << i;
        }
      }
  }
}

// Every level computes the same function the scalar reference does, to a few ulps (the
// vectorized loops evaluate the same expressions in the same order per element).
TEST(VectorOps, LevelsAgreeWithScalarReference) {
  const VectorKernels& ref = vector_kernels_scalar();
  const int64_t n = 4099;
  const auto g = random_vec(n, 6, 5.0f), u = random_vec(n, 7, 5.0f);
  for (IsaLevel isa : levels()) {
    const VectorKernels& k = vector_kernels(isa);
    std::vector<float> a(n), b(n);
    ref.glu_gelu_tanh(g.data(), u.data(), a.data(), n);
    k.glu_gelu_tanh(g.data(), u.data(), b.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(a[i], b[i], 4e-7 * (1 + std::fabs(a[i]))) << isa_name(isa);
    ref.glu_swiglu_oai(g.data(), u.data(), a.data(), n, 1.702f, 7.0f);
    k.glu_swiglu_oai(g.data(), u.data(), b.data(), n, 1.702f, 7.0f);
    for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(a[i], b[i], 4e-7 * (1 + std::fabs(a[i]))) << isa_name(isa);
  }
}

}  // namespace
}  // namespace strata::cpu
