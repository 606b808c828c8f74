// W8A8 kernels and matmul: every SIMD level bit-identical to the scalar reference over awkward
// sizes and unaligned pointers (integer sums are exact and every level scales them with the same
// float operations), and the whole matmul against a float64 product of the unquantized inputs
// within the error bound of symmetric round-to-nearest quantization.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/w8a8_kernels.h"
#include "backend/cpu/w8a8_matrix.h"
#include "core/check.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "test_kernels_util.h"

namespace strata::cpu {
namespace {

class IsaGuard {
 public:
  IsaGuard() : saved_(isa_level()) {}
  ~IsaGuard() { set_isa_level(saved_); }

 private:
  IsaLevel saved_;
};

// A random group (biased u8 quants, extremes included) and activation tile, with the given byte
// offsets from 64-byte alignment.
struct KernelCase {
  int64_t kp;
  std::vector<uint8_t> w_buf;
  std::vector<int8_t> a_buf;
  std::vector<float> w_scale;
  std::vector<int32_t> sum;
  std::vector<float> scale;
  const uint8_t* w = nullptr;
  W8A8ActTile tile{};

  KernelCase(int64_t kp_, size_t w_off, size_t a_off, size_t a_pad, uint32_t seed) : kp(kp_) {
    std::mt19937 gen(seed);
    std::uniform_int_distribution<int> q(-127, 127);
    std::bernoulli_distribution extreme(0.2);
    w_buf.resize(static_cast<size_t>(kp) * 16 + w_off);
    w = w_buf.data() + w_off;
    for (size_t i = w_off; i < w_buf.size(); ++i)
      w_buf[i] = static_cast<uint8_t>((extreme(gen) ? (gen() % 2 ? 127 : -127) : q(gen)) + 128);
    const size_t stride = static_cast<size_t>(kp) + a_pad;
    a_buf.resize(stride * kW8A8Cols + a_off);
    int8_t* a = a_buf.data() + a_off;
    sum.assign(kW8A8Cols, 0);
    for (int c = 0; c < kW8A8Cols; ++c)
      for (int64_t k = 0; k < kp; ++k) {
        const int v = extreme(gen) ? (gen() % 2 ? 127 : -127) : q(gen);
        a[static_cast<size_t>(c) * stride + static_cast<size_t>(k)] = static_cast<int8_t>(v);
        sum[static_cast<size_t>(c)] += v;
      }
    std::uniform_real_distribution<float> sd(1e-4f, 1e-1f);
    for (int r = 0; r < 16; ++r) w_scale.push_back(sd(gen));
    for (int c = 0; c < kW8A8Cols; ++c) scale.push_back(sd(gen));
    tile = W8A8ActTile{a, stride, sum.data(), scale.data()};
  }
};

TEST(W8A8Kernels, ScalarMatchesIntegerDefinition) {
  // The scalar reference against the layout written out (w8a8_kernels.h), in int64.
  for (int64_t kp : {4, 32, 124, 132}) {
    KernelCase kc(kp, 0, 0, 0, 7);
    std::vector<float> y(16 * 3);
    w8a8_gemm_scalar(kc.w, kp, kc.w_scale.data(), kc.tile, 3, y.data(), 16, 16);
    for (int c = 0; c < 3; ++c)
      for (int r = 0; r < 16; ++r) {
        int64_t dot = 0;
        for (int64_t k = 0; k < kp; ++k)
          dot += (int64_t{kc.w[(k / 4) * 64 + r * 4 + k % 4]} - 128) * kc.tile.qs[c * kc.tile.stride + k];
        const double want = static_cast<double>(dot) * kc.scale[c] * kc.w_scale[r];
        EXPECT_NEAR(y[c * 16 + r], want, 1e-6 * std::fabs(want) + 1e-30) << kp << " " << c << " " << r;
      }
  }
}

TEST(W8A8Kernels, EveryLevelBitIdenticalToScalar) {
  // kp = 4 * {1, 31, 33, 257} and a few more, unaligned weights / activations / outputs.
  const int64_t kps[] = {4, 8, 124, 132, 1028, 2048};
  int checked = 0;
  for (IsaLevel isa : testing::arch_simd_levels()) {
    if (!isa_supported(isa)) continue;
    const W8A8KernelSet& k = w8a8_kernels(isa);
    ASSERT_EQ(k.level, isa);
    for (int64_t kp : kps)
      for (size_t off : {size_t{0}, size_t{1}, size_t{3}}) {
        KernelCase kc(kp, off, off + 1, off * 4 + 4, static_cast<uint32_t>(kp + off));
        for (int nc = 1; nc <= kW8A8Cols; ++nc)
          for (int n_rows : {1, 5, 16}) {
            const size_t y_stride = 16 + off;
            std::vector<float> want(y_stride * nc + 1, -1.0f), got(y_stride * nc + 1, -1.0f);
            w8a8_gemm_scalar(kc.w, kp, kc.w_scale.data(), kc.tile, nc, want.data() + 1, y_stride, n_rows);
            k.gemm(kc.w, kp, kc.w_scale.data(), kc.tile, nc, got.data() + 1, y_stride, n_rows);
            ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
                << isa_name(isa) << " kp " << kp << " nc " << nc << " rows " << n_rows << " off " << off;
            ++checked;
          }
      }
  }
  if (checked == 0) GTEST_SKIP() << "no SIMD level on this CPU";
}

TEST(W8A8Kernels, EveryLevelResolvesToASupportedSet) {
  for (IsaLevel isa : testing::arch_isa_levels()) {
    const IsaLevel got = w8a8_kernels(isa).level;
    EXPECT_TRUE(isa_supported(got)) << isa_name(isa);
    EXPECT_TRUE(isa_includes(isa, got)) << isa_name(isa);
  }
}

// y from float64 arithmetic on the unquantized inputs, and the bound of the quantization error:
// with d_o = max|W_o| / 127 and d_t = max|x_t| / 127 (or absmax / 127, x clamped to +-absmax),
// |W - d_o q_w| <= d_o / 2 and |x - d_t q_x| <= d_t / 2 elementwise, so
// |y - y_q| <= sum_k (|x_k| d_o / 2 + |W_k| d_t / 2 + d_o d_t / 4), plus float rounding.
void expect_within_quant_bound(const std::vector<float>& w, const std::vector<float>& x,
                               const std::vector<float>& y, int64_t n_in, int64_t n_out, int64_t n_tokens,
                               float static_absmax, const std::string& what) {
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* xt = x.data() + t * n_in;
    double xmax = 0.0;
    for (int64_t k = 0; k < n_in; ++k) xmax = std::max(xmax, std::fabs(double{xt[k]}));
    const double clip = static_absmax > 0.0f ? static_absmax : xmax;
    const double dt = clip / 127.0;
    for (int64_t o = 0; o < n_out; ++o) {
      const float* wo = w.data() + o * n_in;
      double wmax = 0.0;
      for (int64_t k = 0; k < n_in; ++k) wmax = std::max(wmax, std::fabs(double{wo[k]}));
      const double d_o = wmax / 127.0;
      double ref = 0.0, bound = 0.0, mag = 0.0;
      for (int64_t k = 0; k < n_in; ++k) {
        const double xc = std::clamp(double{xt[k]}, -clip, clip);
        ref += double{wo[k]} * xc;
        bound += std::fabs(xc) * d_o / 2 + std::fabs(double{wo[k]}) * dt / 2 + d_o * dt / 4;
        mag += std::fabs(double{wo[k]} * xc);
      }
      const double got = y[static_cast<size_t>(t * n_out + o)];
      ASSERT_LE(std::fabs(got - ref), bound * 1.0001 + 1e-5 * mag + 1e-30)
          << what << " t " << t << " o " << o << " ref " << ref;
    }
  }
}

struct MatmulShape {
  int64_t n_in, n_out, n_tokens;
};

TEST(W8A8Matmul, EveryLevelWithinQuantizationBoundOfFloat64) {
  IsaGuard guard;
  ThreadPool pool(2);
  const MatmulShape shapes[] = {{1, 1, 1},     {31, 17, 1},  {33, 33, 13},
                                {257, 31, 30}, {64, 16, 12}, {130, 48, 25}};
  for (IsaLevel isa : testing::arch_isa_levels()) {
    if (!isa_supported(isa)) continue;
    set_isa_level(isa);
    for (const MatmulShape& s : shapes)
      for (float static_absmax : {0.0f, 1.5f}) {
        const auto w = testing::random_floats(static_cast<size_t>(s.n_in * s.n_out), 11, 0.05f);
        const auto x = testing::random_floats(static_cast<size_t>(s.n_in * s.n_tokens), 12, 1.0f);
        auto m = W8A8Matrix::pack(&pool, w.data(), s.n_in, s.n_out, W8A8ActQuant{static_absmax});
        std::vector<float> y(static_cast<size_t>(s.n_out * s.n_tokens));
        w8a8_matmul(pool, *m, x.data(), y.data(), s.n_tokens);
        expect_within_quant_bound(w, x, y, s.n_in, s.n_out, s.n_tokens, static_absmax,
                                  isa_name(isa) + " " + std::to_string(s.n_in) + "x" +
                                      std::to_string(s.n_out) + " static " + std::to_string(static_absmax));
      }
  }
}

TEST(W8A8Matmul, BatchInvariantAndSameAtEveryLevel) {
  // A token's output does not depend on the batch it is in, nor on the ISA level.
  IsaGuard guard;
  ThreadPool pool(2);
  const int64_t n_in = 257, n_out = 70, n_tokens = 29;
  const auto w = testing::random_floats(static_cast<size_t>(n_in * n_out), 3, 0.1f);
  const auto x = testing::random_floats(static_cast<size_t>(n_in * n_tokens), 4, 2.0f);
  auto m = W8A8Matrix::pack(&pool, w.data(), n_in, n_out, W8A8ActQuant{});
  set_isa_level(IsaLevel::Scalar);
  std::vector<float> want(static_cast<size_t>(n_out * n_tokens));
  w8a8_matmul(pool, *m, x.data(), want.data(), n_tokens);
  for (IsaLevel isa : testing::arch_isa_levels()) {
    if (!isa_supported(isa)) continue;
    set_isa_level(isa);
    std::vector<float> all(want.size());
    w8a8_matmul(pool, *m, x.data(), all.data(), n_tokens);
    ASSERT_EQ(std::memcmp(all.data(), want.data(), all.size() * sizeof(float)), 0) << isa_name(isa);
    std::vector<float> one(static_cast<size_t>(n_out));
    w8a8_matmul(pool, *m, x.data() + 17 * n_in, one.data(), 1);
    ASSERT_EQ(std::memcmp(one.data(), want.data() + 17 * n_out, one.size() * sizeof(float)), 0)
        << isa_name(isa);
  }
}

TEST(W8A8Matmul, StaticScaleClampsOutliers) {
  // One activation far beyond the calibrated absmax is clamped to it (not wrapped).
  ThreadPool pool(1);
  const int64_t n_in = 8;
  std::vector<float> w(n_in, 1.0f);
  std::vector<float> x(n_in, 0.5f);
  x[3] = 100.0f;
  auto m = W8A8Matrix::pack(&pool, w.data(), n_in, 1, W8A8ActQuant{1.0f});
  float y = 0.0f;
  w8a8_matmul(pool, *m, x.data(), &y, 1);
  EXPECT_NEAR(y, 7 * 0.5 + 1.0, 7 * 0.5 / 127.0);
}

TEST(W8A8Matmul, BadInputIsAnError) {
  std::vector<float> w(4, 1.0f);
  EXPECT_THROW(W8A8Matrix::pack(nullptr, w.data(), 0, 1, {}), Error);
  EXPECT_THROW(W8A8Matrix::pack(nullptr, w.data(), kW8A8MaxK + 1, 1, {}), Error);
  EXPECT_THROW(W8A8Matrix::pack(nullptr, w.data(), 4, 1, W8A8ActQuant{-1.0f}), Error);
  w[2] = std::nanf("");
  EXPECT_THROW(W8A8Matrix::pack(nullptr, w.data(), 4, 1, {}), Error);
}

}  // namespace
}  // namespace strata::cpu
