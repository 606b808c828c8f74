// Dense matrix products for the calibration algorithms (GPTQ's Hessian factorisation and lazy
// batch updates, Gram matrix accumulation, AWQ's loss): C += alpha * A * B on row-major matrices.
//
// The scalar version is the reference; AVX2 and AVX-512 versions keep a register tile of C (rows
// x two vectors) across the K loop. The level follows isa_level() (STRATA_ISA lowers it). These
// are not batch-invariant kernels for the engine: results differ across levels by float
// summation order only.
#pragma once

#include <cstdint>

namespace strata {
class ThreadPool;
}

namespace strata::calib {

// C[M, N] += alpha * A[M, K] * B[K, N]; leading dimensions in elements.
void gemm(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
          int64_t ldb, float* C, int64_t ldc);
void gemm(int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda, const double* B,
          int64_t ldb, double* C, int64_t ldc);

// The same with rows of C split across the pool (pool may be null: the calling thread alone).
void gemm_parallel(ThreadPool* pool, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                   int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc);
void gemm_parallel(ThreadPool* pool, int64_t M, int64_t N, int64_t K, double alpha, const double* A,
                   int64_t lda, const double* B, int64_t ldb, double* C, int64_t ldc);

// Per-ISA entry points (dense_gemm_{scalar,avx2,avx512}); gemm() picks one.
using GemmF32 = void (*)(int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                         float*, int64_t);
using GemmF64 = void (*)(int64_t, int64_t, int64_t, double, const double*, int64_t, const double*, int64_t,
                         double*, int64_t);
void gemm_f32_scalar(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                     const float* B, int64_t ldb, float* C, int64_t ldc);
void gemm_f64_scalar(int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
                     const double* B, int64_t ldb, double* C, int64_t ldc);
void gemm_f32_avx2(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
                   int64_t ldb, float* C, int64_t ldc);
void gemm_f64_avx2(int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
                   const double* B, int64_t ldb, double* C, int64_t ldc);
void gemm_f32_avx512(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                     const float* B, int64_t ldb, float* C, int64_t ldc);
void gemm_f64_avx512(int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
                     const double* B, int64_t ldb, double* C, int64_t ldc);

}  // namespace strata::calib
