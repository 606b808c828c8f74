#include "calib/output_error.h"

#include "calib/dense_gemm.h"
#include "core/check.h"

namespace strata::calib {

std::vector<int64_t> sample_rows(int64_t n_out, int64_t max_rows) {
  std::vector<int64_t> rows;
  const int64_t k = max_rows <= 0 || max_rows >= n_out ? n_out : max_rows;
  rows.reserve(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) rows.push_back(i * n_out / k);
  return rows;
}

double quadratic_error(const float* D, int64_t n_rows, const InputStats& in, ThreadPool* pool) {
  const int64_t n = in.n;
  double total = 0;
  if (!in.has_gram()) {
    for (int64_t r = 0; r < n_rows; ++r)
      for (int64_t i = 0; i < n; ++i) {
        const double d = D[r * n + i];
        total += in.msq[static_cast<size_t>(i)] * d * d;
      }
    return total;
  }
  std::vector<float> DH(static_cast<size_t>(n_rows * n), 0.0f);  // [n_rows, n]
  gemm_parallel(pool, n_rows, n, n, 1.0f, D, n, in.gram.data(), n, DH.data(), n);
  for (int64_t k = 0; k < n_rows * n; ++k) total += static_cast<double>(D[k]) * DH[static_cast<size_t>(k)];
  return total;
}

double relative_output_error(const float* w_ref, const float* w_new, int64_t n_out, const InputStats& in,
                             int64_t max_rows, ThreadPool* pool) {
  const int64_t n = in.n;
  const std::vector<int64_t> rows = sample_rows(n_out, max_rows);
  const auto R = static_cast<int64_t>(rows.size());
  std::vector<float> D(static_cast<size_t>(R * n)), Wr(static_cast<size_t>(R * n));
  for (int64_t k = 0; k < R; ++k)
    for (int64_t i = 0; i < n; ++i) {
      const float a = w_ref[rows[static_cast<size_t>(k)] * n + i];
      Wr[static_cast<size_t>(k * n + i)] = a;
      D[static_cast<size_t>(k * n + i)] = w_new[rows[static_cast<size_t>(k)] * n + i] - a;
    }
  const double den = quadratic_error(Wr.data(), R, in, pool);
  const double num = quadratic_error(D.data(), R, in, pool);
  return den > 0 ? num / den : 0.0;
}

}  // namespace strata::calib
