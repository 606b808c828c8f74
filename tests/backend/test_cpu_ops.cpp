// The CPU op kernels at every ISA level against plain double-precision references.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend/cpu/cpu_ops.h"
#include "core/fp16.h"

namespace strata::cpu {
namespace {

std::vector<IsaLevel> levels() {
  return supported_isa_levels();
}

std::vector<float> random_vec(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

TEST(CpuOps, RmsNormAndSwigluAndAdd) {
  for (IsaLevel isa : levels()) {
    const OpKernels& k = op_kernels(isa);
    for (int64_t n : {1, 31, 33, 257, 2048}) {
      // +1 float offsets make the pointers unaligned for vector loads.
      auto x = random_vec(n + 1, 1), w = random_vec(n + 1, 2), y = std::vector<float>(n + 1);
      k.rms_norm_row(x.data() + 1, w.data() + 1, y.data() + 1, n, 1e-5f);
      double ss = 0;
      for (int64_t i = 0; i < n; ++i) ss += double(x[i + 1]) * x[i + 1];
      const double scale = 1.0 / std::sqrt(ss / n + 1e-5);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_NEAR(y[i + 1], x[i + 1] * scale * w[i + 1],
                    1e-5 * (1 + std::fabs(x[i + 1] * scale * w[i + 1])))
            << isa_name(isa) << " n=" << n;

      auto g = random_vec(n, 3, 4.0f), u = random_vec(n, 4), o = std::vector<float>(n);
      k.swiglu(g.data(), u.data(), o.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double ref = g[i] / (1.0 + std::exp(-double(g[i]))) * u[i];
        ASSERT_NEAR(o[i], ref, 1e-6 * (1 + std::fabs(ref))) << isa_name(isa);
      }
      auto a = random_vec(n, 5), b = random_vec(n, 6), sum = a;
      k.add(sum.data(), b.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sum[i], a[i] + b[i]);
    }
  }
}

TEST(CpuOps, RopeRotatesPairsOrHalves) {
  for (IsaLevel isa : levels()) {
    const OpKernels& k = op_kernels(isa);
    const int hd = 8, heads = 2, n_rot = 8;
    const auto x0 = random_vec(hd * heads, 7);
    std::vector<float> cs(n_rot);
    for (int i = 0; i < n_rot / 2; ++i) {
      cs[2 * i] = std::cos(0.3f * (i + 1));
      cs[2 * i + 1] = std::sin(0.3f * (i + 1));
    }
    for (bool neox : {false, true}) {
      auto x = x0;
      k.rope_row(x.data(), cs.data(), heads, hd, n_rot, neox);
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < n_rot / 2; ++i) {
          const int a = neox ? i : 2 * i, b = neox ? i + n_rot / 2 : 2 * i + 1;
          const float xa = x0[h * hd + a], xb = x0[h * hd + b];
          EXPECT_NEAR(x[h * hd + a], xa * cs[2 * i] - xb * cs[2 * i + 1], 1e-6);
          EXPECT_NEAR(x[h * hd + b], xa * cs[2 * i + 1] + xb * cs[2 * i], 1e-6);
        }
    }
  }
}

}  // namespace
}  // namespace strata::cpu
