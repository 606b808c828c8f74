#include "calib/dense_gemm.h"

#include <algorithm>

#include "core/cpu_features.h"
#include "core/thread_pool.h"

namespace strata::calib {
namespace {

template <typename T>
void gemm_reference(int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, const T* B,
                    int64_t ldb, T* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) {
      const T a = alpha * A[i * lda + k];
      if (a == T(0)) continue;
      const T* b = B + k * ldb;
      T* c = C + i * ldc;
      for (int64_t j = 0; j < N; ++j) c[j] += a * b[j];
    }
}

GemmF32 pick_f32() {
  switch (isa_level()) {
    case IsaLevel::Amx:  // AMX tiles serve the packed and W8A8 GEMMs only
    case IsaLevel::Avx512:
      return gemm_f32_avx512;
    case IsaLevel::AvxVnni:  // float kernels: AVX-VNNI adds nothing to AVX2
    case IsaLevel::Avx2:
      return gemm_f32_avx2;
    default:
      return gemm_f32_scalar;
  }
}

GemmF64 pick_f64() {
  switch (isa_level()) {
    case IsaLevel::Amx:  // AMX tiles serve the packed and W8A8 GEMMs only
    case IsaLevel::Avx512:
      return gemm_f64_avx512;
    case IsaLevel::AvxVnni:
    case IsaLevel::Avx2:
      return gemm_f64_avx2;
    default:
      return gemm_f64_scalar;
  }
}

// Rows per work item: enough work to amortise dispatch.
int64_t row_grain(int64_t N, int64_t K) {
  const int64_t per_row = std::max<int64_t>(1, N * K);
  return std::max<int64_t>(6, ((int64_t{1} << 20) / per_row + 5) / 6 * 6);
}

template <typename T, typename Fn>
void split_rows(ThreadPool* pool, int64_t M, int64_t N, int64_t K, const Fn& fn) {
  if (!pool || pool->size() == 1 || M <= 6 || M * N * K < (int64_t{1} << 20)) {
    fn(0, M);
    return;
  }
  const int64_t grain =
      std::min(row_grain(N, K), std::max<int64_t>(6, (M + pool->size() - 1) / pool->size()));
  pool->parallel_for(M, grain, [&](int64_t b, int64_t e, int) { fn(b, e); });
}

}  // namespace

void gemm_f32_scalar(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                     const float* B, int64_t ldb, float* C, int64_t ldc) {
  gemm_reference(M, N, K, alpha, A, lda, B, ldb, C, ldc);
}

void gemm_f64_scalar(int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
                     const double* B, int64_t ldb, double* C, int64_t ldc) {
  gemm_reference(M, N, K, alpha, A, lda, B, ldb, C, ldc);
}

void gemm(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
          int64_t ldb, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0 || K <= 0) return;
  pick_f32()(M, N, K, alpha, A, lda, B, ldb, C, ldc);
}

void gemm(int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda, const double* B,
          int64_t ldb, double* C, int64_t ldc) {
  if (M <= 0 || N <= 0 || K <= 0) return;
  pick_f64()(M, N, K, alpha, A, lda, B, ldb, C, ldc);
}

void gemm_parallel(ThreadPool* pool, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                   int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0 || K <= 0) return;
  const GemmF32 f = pick_f32();
  split_rows<float>(pool, M, N, K, [&](int64_t b, int64_t e) {
    f(e - b, N, K, alpha, A + b * lda, lda, B, ldb, C + b * ldc, ldc);
  });
}

void gemm_parallel(ThreadPool* pool, int64_t M, int64_t N, int64_t K, double alpha, const double* A,
                   int64_t lda, const double* B, int64_t ldb, double* C, int64_t ldc) {
  if (M <= 0 || N <= 0 || K <= 0) return;
  const GemmF64 f = pick_f64();
  split_rows<double>(pool, M, N, K, [&](int64_t b, int64_t e) {
    f(e - b, N, K, alpha, A + b * lda, lda, B, ldb, C + b * ldc, ldc);
  });
}

}  // namespace strata::calib
