// AVX2 + FMA instantiation of dense_gemm_tile.h.
#include <immintrin.h>

#include "calib/dense_gemm.h"
#include "calib/dense_gemm_tile.h"

namespace strata::calib {
namespace {

struct OpsF32 {
  using T = float;
  using V = __m256;
  static constexpr int W = 8;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(T x) { return _mm256_set1_ps(x); }
  static V load(const T* p) { return _mm256_loadu_ps(p); }
  static void store(T* p, V v) { _mm256_storeu_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
};

struct OpsF64 {
  using T = double;
  using V = __m256d;
  static constexpr int W = 4;
  static V zero() { return _mm256_setzero_pd(); }
  static V set1(T x) { return _mm256_set1_pd(x); }
  static V load(const T* p) { return _mm256_loadu_pd(p); }
  static void store(T* p, V v) { _mm256_storeu_pd(p, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
};

}  // namespace

void gemm_f32_avx2(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
                   int64_t ldb, float* C, int64_t ldc) {
  gemm_tiled<OpsF32>(M, N, K, alpha, A, lda, B, ldb, C, ldc);
}

void gemm_f64_avx2(int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
                   const double* B, int64_t ldb, double* C, int64_t ldc) {
  gemm_tiled<OpsF64>(M, N, K, alpha, A, lda, B, ldb, C, ldc);
}

}  // namespace strata::calib
