// The few-token F16 GEMM (few_token_f16.h) against (1) the F16 register tile of the same ISA
// level, bitwise: a verification step must give the tokens of plain decoding (batch
// invariance), and (2) a float64 dot product of the half-precision values, within float
// summation error. Awkward sizes, odd weight addresses, every x86-64 level the CPU has.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/few_token_f16.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/matmul.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "test_kernels_util.h"

namespace strata::cpu {
namespace {

struct Shape {
  int64_t n;  // elements per row
  int nr;     // weight rows
  int nc;     // activation rows (tokens)
};

class FewTokenF16 : public ::testing::TestWithParam<IsaLevel> {};

TEST_P(FewTokenF16, MatchesTheF16TileBitwiseAndAFloat64Reference) {
  const IsaLevel isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not on this CPU";
  const FewTokenF16Kernels* few = few_token_f16_kernels(isa);
  const TypeKernels& k = type_kernels(TensorType::F16, isa);
  if (!few) {
    // Only the scalar level (the reference tile is its path) goes without.
    EXPECT_EQ(resolved_isa(TensorType::F16, isa), IsaLevel::Scalar);
    return;
  }
  std::mt19937 gen(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (const Shape s : {Shape{1, 1, 1}, Shape{31, 3, 2}, Shape{33, 4, 5}, Shape{257, 5, 7}, Shape{16, 9, 6},
                        Shape{255, 8, 13}, Shape{1000, 7, 16}, Shape{2048, 4, 4}, Shape{17, 1, 12}}) {
    // Weights at an odd byte address, activations 4 bytes off a cache line.
    const size_t ws = static_cast<size_t>(s.n) * 2 + 6;  // row stride in bytes, not a multiple of 4
    std::vector<uint8_t> wbuf(ws * static_cast<size_t>(s.nr) + 1);
    uint8_t* w = wbuf.data() + 1;
    std::vector<float> xf(static_cast<size_t>(s.n * s.nc));
    for (int r = 0; r < s.nr; ++r)
      for (int64_t i = 0; i < s.n; ++i) {
        const fp16_t h = f32_to_fp16(nd(gen));
        std::memcpy(w + r * ws + i * 2, &h, 2);
      }
    for (auto& v : xf) v = nd(gen);
    // The activations as the F16 tile sees them (half precision) and as the few-token kernel
    // does (those halves widened).
    std::vector<uint8_t> half(static_cast<size_t>(s.n * s.nc) * 2);
    std::vector<float> abuf(static_cast<size_t>(s.n * s.nc) + 1);
    float* a = abuf.data() + 1;
    for (int c = 0; c < s.nc; ++c) {
      k.from_float(xf.data() + c * s.n, half.data() + c * s.n * 2, s.n);
      few->widen(half.data() + c * s.n * 2, a + c * s.n, s.n);
    }
    const size_t os = static_cast<size_t>(s.nr) + 3;
    std::vector<float> got(os * static_cast<size_t>(s.nc), -1.0f), tile(got.size(), -2.0f);
    few->gemm(s.n, s.nr, s.nc, w, ws, a, static_cast<size_t>(s.n), got.data(), os);
    for (int c = 0; c < s.nc; ++c)
      k.gemm_tile(s.n, s.nr, 1, w, ws, half.data() + c * s.n * 2, 0, tile.data() + c * os, os);
    for (int c = 0; c < s.nc; ++c)
      for (int r = 0; r < s.nr; ++r) {
        const size_t o = c * os + static_cast<size_t>(r);
        // Widening is exact: the float is the half's value.
        double ref = 0.0, mag = 0.0;
        for (int64_t i = 0; i < s.n; ++i) {
          fp16_t wh, ah;
          std::memcpy(&wh, w + r * ws + i * 2, 2);
          std::memcpy(&ah, half.data() + (c * s.n + i) * 2, 2);
          ASSERT_EQ(a[c * s.n + i], fp16_to_f32(ah));
          const double p = static_cast<double>(fp16_to_f32(wh)) * fp16_to_f32(ah);
          ref += p;
          mag += std::fabs(p);
        }
        EXPECT_EQ(std::memcmp(&got[o], &tile[o], sizeof(float)), 0)
            << isa_name(isa) << " n " << s.n << " row " << r << " col " << c << ": " << got[o] << " vs tile "
            << tile[o];
        EXPECT_NEAR(got[o], ref, 1e-6 * mag * std::sqrt(static_cast<double>(s.n)) + 1e-6)
            << isa_name(isa) << " n " << s.n << " row " << r << " col " << c;
      }
    // Outputs outside [nr) of each column are left alone.
    for (int c = 0; c < s.nc; ++c)
      for (size_t r = static_cast<size_t>(s.nr); r < os; ++r) EXPECT_EQ(got[c * os + r], -1.0f);
  }
}

// Through matmul(): every token count of the few-token range, and prefills past it (the F16
// tile's path, partial token tiles), give each token's decode result.
TEST_P(FewTokenF16, MatmulOfEveryTokenCountEqualsDecodeBitwise) {
  const IsaLevel isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not on this CPU";
  const IsaLevel saved = isa_level();
  set_isa_level(isa);
  const int64_t n_in = 96 + 5, n_out = 70, n_tok = 3 * kFewTokensMax + 5;
  std::mt19937 gen(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<fp16_t> w(static_cast<size_t>(n_in * n_out));
  for (auto& h : w) h = f32_to_fp16(nd(gen));
  std::vector<float> x(static_cast<size_t>(n_in * n_tok));
  for (auto& v : x) v = nd(gen);
  auto pm = pack_matrix(TensorType::F16, n_in, n_out, w.data(), PackLayout::Auto);
  ThreadPool pool(2);
  std::vector<float> one(static_cast<size_t>(n_out * n_tok));
  for (int64_t t = 0; t < n_tok; ++t) matmul(pool, *pm, x.data() + t * n_in, one.data() + t * n_out, 1);
  for (int64_t n = 2; n <= n_tok; ++n) {
    std::vector<float> y(static_cast<size_t>(n_out * n));
    matmul(pool, *pm, x.data(), y.data(), n);
    EXPECT_EQ(std::memcmp(y.data(), one.data(), y.size() * sizeof(float)), 0) << isa_name(isa) << " n " << n;
  }
  set_isa_level(saved);
}

INSTANTIATE_TEST_SUITE_P(Levels, FewTokenF16, ::testing::ValuesIn(testing::arch_isa_levels()),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace strata::cpu
