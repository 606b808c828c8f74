// AVX-512 instantiation of dense_gemm_tile.h.
// GCC 12's AVX-512 intrinsic headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "calib/dense_gemm.h"
#include "calib/dense_gemm_tile.h"

namespace strata::calib {
namespace {

struct OpsF32 {
  using T = float;
  using V = __m512;
  static constexpr int W = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(T x) { return _mm512_set1_ps(x); }
  static V load(const T* p) { return _mm512_loadu_ps(p); }
  static void store(T* p, V v) { _mm512_storeu_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
};

struct OpsF64 {
  using T = double;
  using V = __m512d;
  static constexpr int W = 8;
  static V zero() { return _mm512_setzero_pd(); }
  static V set1(T x) { return _mm512_set1_pd(x); }
  static V load(const T* p) { return _mm512_loadu_pd(p); }
  static void store(T* p, V v) { _mm512_storeu_pd(p, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
};

}  // namespace

void gemm_f32_avx512(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                     const float* B, int64_t ldb, float* C, int64_t ldc) {
  gemm_tiled<OpsF32>(M, N, K, alpha, A, lda, B, ldb, C, ldc);
}

void gemm_f64_avx512(int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
                     const double* B, int64_t ldb, double* C, int64_t ldc) {
  gemm_tiled<OpsF64>(M, N, K, alpha, A, lda, B, ldb, C, ldc);
}

}  // namespace strata::calib
