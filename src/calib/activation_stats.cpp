#include "calib/activation_stats.h"

#include <algorithm>
#include <cmath>

#include "calib/dense_gemm.h"
#include "core/check.h"
#include "core/thread_pool.h"

namespace strata::calib {
namespace {

constexpr int64_t kGramBlock = 128;

}  // namespace

void GramMatrix::accumulate(const float* x, int64_t n_rows, ThreadPool* pool) {
  STRATA_CHECK(!finalized, "Gram matrix accumulated after finalize()");
  if (n_rows <= 0) return;
  // G += X^T X on the lower block triangle: row block I gets X[:, I]^T X[:, 0:I_end].
  std::vector<float> xt(static_cast<size_t>(n * n_rows));  // [n, n_rows]
  for (int64_t t = 0; t < n_rows; ++t)
    for (int64_t i = 0; i < n; ++i) xt[static_cast<size_t>(i * n_rows + t)] = x[t * n + i];
  const int64_t n_blocks = (n + kGramBlock - 1) / kGramBlock;
  auto run = [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t i0 = b * kGramBlock, ib = std::min(kGramBlock, n - i0);
      gemm(ib, i0 + ib, n_rows, 1.0f, xt.data() + i0 * n_rows, n_rows, x, n, g.data() + i0 * n, n);
    }
  };
  if (pool && pool->size() > 1 && n_blocks > 1) {
    pool->parallel_for(n_blocks, 1, [&](int64_t b, int64_t e, int) {
      for (int64_t k = b; k < e; ++k) run(n_blocks - 1 - k, n_blocks - k);  // widest blocks first
    });
  } else {
    run(0, n_blocks);
  }
  count += n_rows;
}

void GramMatrix::finalize() {
  if (finalized) return;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) g[static_cast<size_t>(i * n + j)] = g[static_cast<size_t>(j * n + i)];
  finalized = true;
}

TensorStats::TensorStats(int64_t n_in_, int n_mat_)
    : n_in(n_in_),
      n_mat(n_mat_),
      sum(static_cast<size_t>(n_in_ * n_mat_), 0.0),
      sum_sq(static_cast<size_t>(n_in_ * n_mat_), 0.0),
      sum_abs(static_cast<size_t>(n_in_ * n_mat_), 0.0),
      abs_max(static_cast<size_t>(n_in_ * n_mat_), 0.0f),
      count(static_cast<size_t>(n_mat_), 0.0),
      gram(static_cast<size_t>(n_mat_)) {}

void TensorStats::accumulate(int mat, const float* x, int64_t n_rows) {
  STRATA_CHECK(mat >= 0 && mat < n_mat && !sum.empty() && !sum_abs.empty() && !abs_max.empty());
  double* s = sum.data() + mat * n_in;
  double* s2 = sum_sq.data() + mat * n_in;
  double* sa = sum_abs.data() + mat * n_in;
  float* mx = abs_max.data() + mat * n_in;
  for (int64_t t = 0; t < n_rows; ++t) {
    const float* row = x + t * n_in;
    for (int64_t i = 0; i < n_in; ++i) {
      const double v = row[i];
      s[i] += v;
      s2[i] += v * v;
      sa[i] += std::fabs(v);
      mx[i] = std::max(mx[i], std::fabs(row[i]));
    }
  }
  count[static_cast<size_t>(mat)] += static_cast<double>(n_rows);
}

std::vector<float> TensorStats::importance(int mat) const {
  std::vector<float> out(static_cast<size_t>(n_in), 1.0f);
  const double c = count[static_cast<size_t>(mat)];
  if (c > 0)
    for (int64_t i = 0; i < n_in; ++i)
      out[static_cast<size_t>(i)] = static_cast<float>(sum_sq[static_cast<size_t>(mat * n_in + i)] / c);
  return out;
}

std::vector<float> TensorStats::mean_abs(int mat) const {
  std::vector<float> out(static_cast<size_t>(n_in), 0.0f);
  const double c = count[static_cast<size_t>(mat)];
  if (!(c > 0)) return out;
  for (int64_t i = 0; i < n_in; ++i) {
    const size_t k = static_cast<size_t>(mat * n_in + i);
    out[static_cast<size_t>(i)] =
        static_cast<float>(sum_abs.empty() ? std::sqrt(std::max(0.0, sum_sq[k] / c)) : sum_abs[k] / c);
  }
  return out;
}

float TensorStats::max_abs(int mat) const {
  if (abs_max.empty())
    STRATA_THROW(
        "the calibration statistics have no activation maxima (made by llama-imatrix?): "
        "run `strata calibrate` for static activation scales");
  float m = 0.0f;
  for (int64_t i = 0; i < n_in; ++i) m = std::max(m, abs_max[static_cast<size_t>(mat * n_in + i)]);
  return m;
}

const GramMatrix* TensorStats::gram_of(int mat) const {
  return mat >= 0 && mat < static_cast<int>(gram.size()) ? gram[static_cast<size_t>(mat)].get() : nullptr;
}

}  // namespace strata::calib
