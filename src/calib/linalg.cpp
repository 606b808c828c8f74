#include "calib/linalg.h"

#include <algorithm>
#include <cmath>

#include "calib/dense_gemm.h"
#include "core/check.h"
#include "core/thread_pool.h"

namespace strata::calib {
namespace {

constexpr int64_t kBlock = 128;

template <typename Fn>
void parallel_rows(ThreadPool* pool, int64_t n, int64_t grain, const Fn& fn) {
  if (!pool || pool->size() == 1 || n <= grain) {
    fn(0, n);
    return;
  }
  pool->parallel_for(n, grain, [&](int64_t b, int64_t e, int) { fn(b, e); });
}

// Unblocked Cholesky of the diagonal block A[k0:k0+kb, k0:k0+kb] (earlier blocks already
// subtracted).
bool factor_diagonal(double* A, int64_t n, int64_t k0, int64_t kb) {
  for (int64_t j = k0; j < k0 + kb; ++j) {
    double* aj = A + j * n;
    double s = aj[j];
    for (int64_t p = k0; p < j; ++p) s -= aj[p] * aj[p];
    if (!(s > 0) || !std::isfinite(s)) return false;
    aj[j] = std::sqrt(s);
    for (int64_t i = j + 1; i < k0 + kb; ++i) {
      double* ai = A + i * n;
      double t = ai[j];
      for (int64_t p = k0; p < j; ++p) t -= ai[p] * aj[p];
      ai[j] = t / aj[j];
    }
  }
  return true;
}

}  // namespace

bool cholesky_lower(double* A, int64_t n, ThreadPool* pool) {
  std::vector<double> panel_t;  // [kb, m]: the panel below the diagonal block, transposed
  for (int64_t k0 = 0; k0 < n; k0 += kBlock) {
    const int64_t kb = std::min(kBlock, n - k0);
    if (!factor_diagonal(A, n, k0, kb)) return false;
    const int64_t r0 = k0 + kb, m = n - r0;
    if (m == 0) break;
    // Panel: A21 <- A21 L11^-T, row by row (forward substitution).
    parallel_rows(pool, m, 64, [&](int64_t b, int64_t e) {
      for (int64_t i = r0 + b; i < r0 + e; ++i) {
        double* ai = A + i * n;
        for (int64_t j = k0; j < k0 + kb; ++j) {
          const double* aj = A + j * n;
          double t = ai[j];
          for (int64_t p = k0; p < j; ++p) t -= ai[p] * aj[p];
          ai[j] = t / aj[j];
        }
      }
    });
    // Trailing update A22 -= A21 A21^T, lower block triangle only.
    panel_t.assign(static_cast<size_t>(kb * m), 0.0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < kb; ++p) panel_t[static_cast<size_t>(p * m + i)] = A[(r0 + i) * n + k0 + p];
    const int64_t n_row_blocks = (m + kBlock - 1) / kBlock;
    auto update = [&](int64_t rb0, int64_t rb1) {
      for (int64_t rb = rb0; rb < rb1; ++rb) {
        const int64_t i0 = rb * kBlock, ib = std::min(kBlock, m - i0);
        gemm(ib, i0 + ib, kb, -1.0, A + (r0 + i0) * n + k0, n, panel_t.data(), m, A + (r0 + i0) * n + r0, n);
      }
    };
    if (pool && pool->size() > 1 && n_row_blocks > 1) {
      // Later row blocks are wider: hand them out from the bottom.
      pool->parallel_for(n_row_blocks, 1, [&](int64_t b, int64_t e, int) {
        for (int64_t x = b; x < e; ++x) update(n_row_blocks - 1 - x, n_row_blocks - x);
      });
    } else {
      update(0, n_row_blocks);
    }
  }
  return true;
}

void invert_lower(double* L, int64_t n, ThreadPool* pool) {
  // Block row i: X_ii = inv(L_ii), X_ij = -X_ii * sum_{k=j}^{i-1} L_ik X_kj (rows < i final).
  for (int64_t r = 0; r < n; ++r)
    std::fill(L + r * n + r + 1, L + (r + 1) * n, 0.0);  // the sums read zeros there
  const int64_t nb = (n + kBlock - 1) / kBlock;
  std::vector<double> t;     // [kBlock, n] sums of the current block row
  std::vector<double> diag;  // [kBlock, kBlock] X_ii
  for (int64_t bi = 0; bi < nb; ++bi) {
    const int64_t i0 = bi * kBlock, ib = std::min(kBlock, n - i0);
    diag.assign(static_cast<size_t>(ib * ib), 0.0);
    for (int64_t c = 0; c < ib; ++c) {  // column c of inv(L_ii) by forward substitution
      for (int64_t r = c; r < ib; ++r) {
        double s = r == c ? 1.0 : 0.0;
        for (int64_t p = c; p < r; ++p) s -= L[(i0 + r) * n + i0 + p] * diag[static_cast<size_t>(p * ib + c)];
        diag[static_cast<size_t>(r * ib + c)] = s / L[(i0 + r) * n + i0 + r];
      }
    }
    if (i0 > 0) {
      t.assign(static_cast<size_t>(ib * i0), 0.0);
      auto column_block = [&](int64_t b0, int64_t b1) {
        for (int64_t bj = b0; bj < b1; ++bj) {
          const int64_t j0 = bj * kBlock, jb = std::min(kBlock, i0 - j0);
          gemm(ib, jb, i0 - j0, 1.0, L + i0 * n + j0, n, L + j0 * n + j0, n, t.data() + j0, i0);
        }
      };
      if (pool && pool->size() > 1 && bi > 1)
        pool->parallel_for(bi, 1, [&](int64_t b, int64_t e, int) { column_block(b, e); });
      else
        column_block(0, bi);
      for (int64_t r = 0; r < ib; ++r) std::fill(L + (i0 + r) * n, L + (i0 + r) * n + i0, 0.0);
      gemm_parallel(pool, ib, i0, ib, -1.0, diag.data(), ib, t.data(), i0, L + i0 * n, n);
    }
    for (int64_t r = 0; r < ib; ++r)
      for (int64_t c = 0; c <= r; ++c) L[(i0 + r) * n + i0 + c] = diag[static_cast<size_t>(r * ib + c)];
  }
}

bool inverse_upper_factor(std::vector<double>& H, int64_t n, std::vector<float>* U, ThreadPool* pool) {
  STRATA_CHECK(static_cast<int64_t>(H.size()) == n * n);
  // P H P (P: the reversal), in place: element (i, j) <-> (n-1-i, n-1-j) is a 180-degree turn.
  std::reverse(H.begin(), H.end());
  if (!cholesky_lower(H.data(), n, pool)) return false;
  invert_lower(H.data(), n, pool);
  // U = P L^-1 P: U[a][b] = Linv[n-1-a][n-1-b], upper triangular.
  U->assign(static_cast<size_t>(n * n), 0.0f);
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = a; b < n; ++b)
      (*U)[static_cast<size_t>(a * n + b)] =
          static_cast<float>(H[static_cast<size_t>((n - 1 - a) * n + (n - 1 - b))]);
  return true;
}

}  // namespace strata::calib
