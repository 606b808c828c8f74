// The register-tiled GEMM body shared by dense_gemm_avx2.cpp and dense_gemm_avx512.cpp. Each
// including file instantiates it with its own vector type (internal linkage: anonymous namespace).
//
// Ops: a struct with  using T (float/double), using V (register), static constexpr int W (lanes),
//   V zero(), V set1(T), V load(const T*), void store(T*, V), V fma(V a, V b, V c) (= a * b + c).
#pragma once

#include <algorithm>
#include <cstdint>

namespace strata::calib {
namespace {

// Rows of C per register tile and the K / N blocking that keeps a panel of B in L2.
constexpr int kTileRows = 6;
constexpr int64_t kBlockK = 256;
constexpr int64_t kBlockN = 512;

// C[MR, 2W] += alpha * A[MR, K] B[K, 2W]
template <class Ops, int MR>
inline void tile_full(int64_t K, typename Ops::T alpha, const typename Ops::T* A, int64_t lda,
                      const typename Ops::T* B, int64_t ldb, typename Ops::T* C, int64_t ldc) {
  using V = typename Ops::V;
  V acc0[MR], acc1[MR];
  for (int r = 0; r < MR; ++r) acc0[r] = acc1[r] = Ops::zero();
  for (int64_t k = 0; k < K; ++k) {
    const V b0 = Ops::load(B + k * ldb);
    const V b1 = Ops::load(B + k * ldb + Ops::W);
    for (int r = 0; r < MR; ++r) {
      const V a = Ops::set1(A[r * lda + k]);
      acc0[r] = Ops::fma(a, b0, acc0[r]);
      acc1[r] = Ops::fma(a, b1, acc1[r]);
    }
  }
  const V va = Ops::set1(alpha);
  for (int r = 0; r < MR; ++r) {
    typename Ops::T* c = C + r * ldc;
    Ops::store(c, Ops::fma(va, acc0[r], Ops::load(c)));
    Ops::store(c + Ops::W, Ops::fma(va, acc1[r], Ops::load(c + Ops::W)));
  }
}

// Columns past the last full tile, one scalar accumulator each.
template <class Ops>
inline void tile_tail(int64_t M, int64_t N, int64_t K, typename Ops::T alpha, const typename Ops::T* A,
                      int64_t lda, const typename Ops::T* B, int64_t ldb, typename Ops::T* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      typename Ops::T s = 0;
      for (int64_t k = 0; k < K; ++k) s += A[i * lda + k] * B[k * ldb + j];
      C[i * ldc + j] += alpha * s;
    }
}

template <class Ops, int MR>
inline void rows_block(int64_t N, int64_t K, typename Ops::T alpha, const typename Ops::T* A, int64_t lda,
                       const typename Ops::T* B, int64_t ldb, typename Ops::T* C, int64_t ldc) {
  constexpr int64_t NR = 2 * Ops::W;
  int64_t j = 0;
  for (; j + NR <= N; j += NR) tile_full<Ops, MR>(K, alpha, A, lda, B + j, ldb, C + j, ldc);
  if (j < N) tile_tail<Ops>(MR, N - j, K, alpha, A, lda, B + j, ldb, C + j, ldc);
}

template <class Ops>
void gemm_tiled(int64_t M, int64_t N, int64_t K, typename Ops::T alpha, const typename Ops::T* A, int64_t lda,
                const typename Ops::T* B, int64_t ldb, typename Ops::T* C, int64_t ldc) {
  for (int64_t k0 = 0; k0 < K; k0 += kBlockK) {
    const int64_t kb = std::min(kBlockK, K - k0);
    for (int64_t j0 = 0; j0 < N; j0 += kBlockN) {
      const int64_t nb = std::min(kBlockN, N - j0);
      const auto* Ab = A + k0;
      const auto* Bb = B + k0 * ldb + j0;
      auto* Cb = C + j0;
      int64_t i = 0;
      for (; i + kTileRows <= M; i += kTileRows)
        rows_block<Ops, kTileRows>(nb, kb, alpha, Ab + i * lda, lda, Bb, ldb, Cb + i * ldc, ldc);
      for (; i < M; ++i) rows_block<Ops, 1>(nb, kb, alpha, Ab + i * lda, lda, Bb, ldb, Cb + i * ldc, ldc);
    }
  }
}

}  // namespace
}  // namespace strata::calib
