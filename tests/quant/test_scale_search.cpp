// The scale searches against brute force: for tiny blocks every level vector can be enumerated,
// each with its least-squares scale; the exact search must reach the global optimum.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "quant/scale_search.h"

namespace strata::quant {
namespace {

// Global minimum over L in [-neg, pos]^n with a positive least-squares scale of
// sum(w (x - d L)^2) = sum(w x^2) - (sum w x L)^2 / sum(w L^2).
double brute_force_positive(const std::vector<float>& x, const std::vector<float>& w, int neg, int pos) {
  const int n = static_cast<int>(x.size()), levels = neg + pos + 1;
  double sxx = 0;
  for (int i = 0; i < n; ++i) sxx += static_cast<double>(w[i]) * x[i] * x[i];
  double best = sxx;
  std::vector<int> L(n, -neg);
  for (;;) {
    double sxl = 0, sll = 0;
    for (int i = 0; i < n; ++i) {
      sxl += static_cast<double>(w[i]) * x[i] * L[i];
      sll += static_cast<double>(w[i]) * L[i] * L[i];
    }
    if (sll > 0 && sxl > 0) best = std::min(best, sxx - sxl * sxl / sll);
    int i = 0;
    while (i < n && ++L[i] > pos) L[i++] = -neg;
    if (i == n) break;
  }
  (void)levels;
  return best;
}

TEST(ScaleSearch, ExactSearchReachesBruteForceOptimum) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0, 1);
  std::uniform_real_distribution<float> uniform(0.1f, 2.0f);
  const SearchWindow everything = {0.0, 1e300};
  struct Case {
    int n, neg, pos;
  };
  for (Case c : {Case{5, 2, 1}, Case{6, 4, 3}, Case{4, 8, 7}, Case{5, 3, 3}}) {
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<float> x(c.n), w(c.n);
      for (auto& v : x) v = normal(rng);
      for (auto& v : w) v = trial % 2 ? uniform(rng) : 1.0f;
      std::vector<int> L(c.n);
      double err = 0;
      const double d =
          search_positive_scale(x.data(), w.data(), c.n, c.neg, c.pos, everything, L.data(), &err);
      const double best = brute_force_positive(x, w, c.neg, c.pos);
      EXPECT_NEAR(err, best, 1e-9 + 1e-7 * best) << c.n << " " << c.neg << " " << c.pos << " trial " << trial;
      // The reported error is that of the returned scale and levels.
      double check = 0;
      for (int i = 0; i < c.n; ++i) {
        ASSERT_GE(L[i], -c.neg);
        ASSERT_LE(L[i], c.pos);
        check += w[i] * (x[i] - d * L[i]) * (x[i] - d * L[i]);
      }
      EXPECT_NEAR(check, err, 1e-9 + 1e-7 * err);
    }
  }
}

TEST(ScaleSearch, AffineFitRecoversExactGrid) {
  // x = 0.3 L - 1.2 with L spread over [0, 15]: an exact fit exists and must be found.
  std::vector<float> x(32), w(32, 1.0f);
  for (int i = 0; i < 32; ++i) x[i] = 0.3f * ((i * 7) % 16) - 1.2f;
  int L[32];
  const AffineFit f = search_affine(x.data(), w.data(), 32, 15, false, L);
  EXPECT_NEAR(f.scale, 0.3, 1e-6);
  EXPECT_NEAR(f.offset, -1.2, 1e-6);
  EXPECT_LT(f.err, 1e-10);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(L[i], (i * 7) % 16);
  // With the offset restricted to <= 0 and all values positive, the offset is 0.
  for (int i = 0; i < 32; ++i) x[i] = 0.25f * (1 + i % 15);
  const AffineFit g = search_affine(x.data(), w.data(), 32, 15, true, L);
  EXPECT_EQ(g.offset, 0.0);
  EXPECT_NEAR(g.scale, 0.25, 1e-6);
  EXPECT_LT(g.err, 1e-10);
}

TEST(ScaleSearch, Fp16ScaleHelpers) {
  EXPECT_EQ(to_fp16_clamped(1e9), 0x7BFF);
  EXPECT_EQ(to_fp16_clamped(-1e9), 0xFBFF);
  EXPECT_EQ(to_fp16_clamped(1e-12), 0x0000);
  EXPECT_EQ(to_fp16_scale(1e-12), 0x0001);
  EXPECT_EQ(to_fp16_scale(-1e-12), 0x8001);
  EXPECT_EQ(to_fp16_scale(0.0), 0x0000);
  EXPECT_EQ(round_clamp(2.5, 0, 7), 2);  // half to even
  EXPECT_EQ(round_clamp(3.5, 0, 7), 4);
  EXPECT_EQ(round_clamp(-0.7, 0, 7), 0);
  EXPECT_EQ(round_clamp(1e300, -8, 7), 7);
  EXPECT_EQ(round_clamp(std::nan(""), -8, 7), -8);
}

}  // namespace
}  // namespace strata::quant
