// The calibration GEMM at every ISA level against a float64 product written here, over awkward
// sizes and unaligned pointers; and the Gram matrix accumulation against sum_t x_t x_t^T.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "calib/activation_stats.h"
#include "calib/dense_gemm.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"

namespace strata::calib {
namespace {

struct Shape {
  int64_t M, N, K;
};
const Shape kShapes[] = {{1, 1, 1},   {1, 31, 33},   {33, 1, 31}, {31, 33, 257},
                         {17, 65, 8}, {64, 128, 64}, {5, 257, 3}};

struct Level {
  const char* name;
  IsaLevel level;
  GemmF32 f32;
  GemmF64 f64;
};

std::vector<Level> levels() {
  std::vector<Level> v = {{"scalar", IsaLevel::Scalar, gemm_f32_scalar, gemm_f64_scalar}};
  if (isa_supported(IsaLevel::Avx2))
    v.push_back({"avx2", IsaLevel::Avx2, gemm_f32_avx2, gemm_f64_avx2});
  if (isa_supported(IsaLevel::Avx512))
    v.push_back({"avx512", IsaLevel::Avx512, gemm_f32_avx512, gemm_f64_avx512});
  return v;
}

template <typename T>
void check_level(const Shape& s,
                 void (*fn)(int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, T*, int64_t),
                 double tol, const char* what) {
  // Leading dimensions wider than the matrices, and every pointer one element off alignment.
  const int64_t lda = s.K + 3, ldb = s.N + 5, ldc = s.N + 2;
  std::mt19937 rng(static_cast<uint32_t>(s.M * 1000 + s.N * 10 + s.K));
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<T> A(static_cast<size_t>(s.M * lda + 1)), B(static_cast<size_t>(s.K * ldb + 1)),
      C(static_cast<size_t>(s.M * ldc + 1));
  for (auto& x : A) x = static_cast<T>(d(rng));
  for (auto& x : B) x = static_cast<T>(d(rng));
  for (auto& x : C) x = static_cast<T>(d(rng));
  std::vector<T> C0 = C;
  const T alpha = static_cast<T>(-0.75);
  fn(s.M, s.N, s.K, alpha, A.data() + 1, lda, B.data() + 1, ldb, C.data() + 1, ldc);
  for (int64_t i = 0; i < s.M; ++i)
    for (int64_t j = 0; j < s.N; ++j) {
      double ref = 0;
      for (int64_t k = 0; k < s.K; ++k) ref += double(A[1 + i * lda + k]) * double(B[1 + k * ldb + j]);
      ref = double(C0[1 + i * ldc + j]) + double(alpha) * ref;
      ASSERT_NEAR(double(C[1 + i * ldc + j]), ref, tol * (1 + std::sqrt(double(s.K))))
          << what << " M=" << s.M << " N=" << s.N << " K=" << s.K << " at " << i << "," << j;
    }
  // Padding outside the N columns is untouched.
  for (int64_t i = 0; i < s.M; ++i)
    for (int64_t j = s.N; j < ldc && 1 + i * ldc + j < static_cast<int64_t>(C.size()); ++j)
      ASSERT_EQ(C[1 + i * ldc + j], C0[1 + i * ldc + j]) << what;
}

TEST(DenseGemm, EveryLevelMatchesFloat64Product) {
  for (const Level& l : levels())
    for (const Shape& s : kShapes) {
      check_level<float>(s, l.f32, 1e-5, l.name);
      check_level<double>(s, l.f64, 1e-12, l.name);
    }
}

TEST(DenseGemm, DispatchFollowsIsaLevel) {
  const IsaLevel saved = isa_level();
  for (const Level& l : levels()) {
    set_isa_level(l.level);
    for (const Shape& s : kShapes) {
      check_level<float>(s, static_cast<GemmF32>(gemm), 1e-5, l.name);
      check_level<double>(s, static_cast<GemmF64>(gemm), 1e-12, l.name);
    }
  }
  set_isa_level(saved);
}

TEST(GramMatrix, AccumulatesXtX) {
  ThreadPool pool(2);
  for (int64_t n : {1, 31, 33, 130, 257}) {
    const int64_t rows = 45;
    std::mt19937 rng(static_cast<uint32_t>(n));
    std::normal_distribution<float> d;
    std::vector<float> x(static_cast<size_t>(rows * n));
    for (auto& v : x) v = d(rng);
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
      GramMatrix g(n);
      g.accumulate(x.data(), 20, p);
      g.accumulate(x.data() + 20 * n, rows - 20, p);
      g.finalize();
      EXPECT_EQ(g.count, rows);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double ref = 0;
          for (int64_t t = 0; t < rows; ++t) ref += double(x[t * n + i]) * x[t * n + j];
          ASSERT_NEAR(g.g[static_cast<size_t>(i * n + j)], ref, 1e-4 * (1 + std::fabs(ref)))
              << n << " " << i << "," << j;
        }
    }
  }
}

TEST(TensorStats, SumsMatchFloat64) {
  const int64_t n = 33, rows = 50;
  std::mt19937 rng(9);
  std::normal_distribution<float> d(0.5f, 2.0f);
  std::vector<float> x(static_cast<size_t>(rows * n));
  for (auto& v : x) v = d(rng);
  TensorStats st(n, 2);
  st.accumulate(1, x.data(), rows);
  for (int64_t i = 0; i < n; ++i) {
    double s2 = 0, sa = 0, mx = 0;
    for (int64_t t = 0; t < rows; ++t) {
      const double v = x[t * n + i];
      s2 += v * v;
      sa += std::fabs(v);
      mx = std::max(mx, std::fabs(v));
    }
    EXPECT_NEAR(st.importance(1)[static_cast<size_t>(i)], s2 / rows, 1e-5 * s2 / rows);
    EXPECT_NEAR(st.mean_abs(1)[static_cast<size_t>(i)], sa / rows, 1e-5 * sa / rows);
    EXPECT_FLOAT_EQ(st.abs_max[static_cast<size_t>(n + i)], static_cast<float>(mx));
    EXPECT_EQ(st.importance(0)[static_cast<size_t>(i)], 1.0f);  // slice 0 saw nothing
  }
}

}  // namespace
}  // namespace strata::calib
