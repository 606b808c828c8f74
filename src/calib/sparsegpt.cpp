#include "calib/sparsegpt.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "calib/dense_gemm.h"
#include "calib/linalg.h"
#include "core/check.h"
#include "core/thread_pool.h"

namespace strata::calib {
namespace {

constexpr int64_t kRowsPerTask = 16;
constexpr int kDampRetries = 4;

// The damped Hessian's factor U (U^T U = H^-1) [n, n], raising the damping until H is positive
// definite. Returns the damping used.
double hessian_factor(const float* gram, int64_t n, double damp, std::vector<float>* U, ThreadPool* pool) {
  std::vector<double> diag(static_cast<size_t>(n));
  double mean_diag = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = gram[i * n + i];
    diag[static_cast<size_t>(i)] = std::isfinite(d) && d > 0 ? d : 0.0;
    mean_diag += diag[static_cast<size_t>(i)] > 0 ? diag[static_cast<size_t>(i)] : 1.0;
  }
  mean_diag /= static_cast<double>(n);
  std::vector<double> H;
  for (int attempt = 0;; ++attempt) {
    H.assign(static_cast<size_t>(n * n), 0.0);
    for (int64_t i = 0; i < n * n; ++i) H[static_cast<size_t>(i)] = std::isfinite(gram[i]) ? gram[i] : 0.0;
    for (int64_t a = 0; a < n; ++a) {
      if (diag[static_cast<size_t>(a)] == 0) {  // never excited: no curvature, no coupling
        for (int64_t b = 0; b < n; ++b)
          H[static_cast<size_t>(a * n + b)] = H[static_cast<size_t>(b * n + a)] = 0;
        H[static_cast<size_t>(a * n + a)] = 1.0;
      }
      H[static_cast<size_t>(a * n + a)] += damp * mean_diag;
    }
    if (inverse_upper_factor(H, n, U, pool)) return damp;
    if (attempt + 1 == kDampRetries)
      STRATA_THROW("SparseGPT: the Hessian is not positive definite even with damping ", damp);
    damp = std::max(damp * 10, 1e-3);
  }
}

struct Problem {
  int64_t n_out, n_in;
  const SparsityPattern* p;
  const float* U;   // [n_in, n_in]
  float* w;         // [n_out, n_in]
  uint8_t* pruned;  // [n_out, n_in]
};

// The unstructured mask of batch [i1, i2) over all rows: the k lowest saliencies w^2 / U_jj^2.
void select_batch_mask(const Problem& q, int64_t i1, int64_t i2) {
  const int64_t B = i2 - i1, n = q.n_in;
  const int64_t numel = q.n_out * B;
  std::vector<float> score(static_cast<size_t>(numel));
  for (int64_t r = 0; r < q.n_out; ++r)
    for (int64_t c = 0; c < B; ++c) {
      const float d = q.U[(i1 + c) * n + i1 + c];
      const float v = q.w[r * n + i1 + c];
      score[static_cast<size_t>(r * B + c)] = v * v / (d * d);
    }
  const int64_t k = std::llround(q.p->sparsity * static_cast<double>(numel));
  std::vector<int64_t> idx(static_cast<size_t>(numel));
  std::iota(idx.begin(), idx.end(), int64_t{0});
  auto less = [&](int64_t a, int64_t b) {
    return score[static_cast<size_t>(a)] < score[static_cast<size_t>(b)] ||
           (score[static_cast<size_t>(a)] == score[static_cast<size_t>(b)] && a < b);
  };
  if (k > 0 && k < numel) std::nth_element(idx.begin(), idx.begin() + k, idx.end(), less);
  for (int64_t r = 0; r < q.n_out; ++r) std::fill(q.pruned + r * n + i1, q.pruned + r * n + i2, uint8_t{0});
  for (int64_t i = 0; i < std::min(k, numel); ++i) {
    const int64_t e = idx[static_cast<size_t>(i)];
    q.pruned[(e / B) * n + i1 + e % B] = 1;
  }
}

// N:M: the mask of group [g, g + M) of row r, from its current weights.
void select_group_mask(const Problem& q, int64_t r, int64_t g) {
  const int64_t n = q.n_in, M = q.p->m;
  float score[256];
  int32_t idx[256];
  for (int64_t c = 0; c < M; ++c) {
    const float d = q.U[(g + c) * n + g + c];
    const float v = q.w[r * n + g + c];
    score[c] = v * v / (d * d);
    idx[c] = static_cast<int32_t>(c);
  }
  std::sort(idx, idx + M,
            [&](int32_t a, int32_t b) { return score[a] < score[b] || (score[a] == score[b] && a < b); });
  uint8_t* mk = q.pruned + r * n + g;
  std::fill(mk, mk + M, uint8_t{0});
  for (int c = 0; c < q.p->n; ++c) mk[idx[c]] = 1;
}

// Rows [r0, r1) through the columns of batch [i1, i2), then the update right of it.
void prune_batch_rows(const Problem& q, int64_t r0, int64_t r1, int64_t i1, int64_t i2) {
  const int64_t n = q.n_in, B = i2 - i1, R = r1 - r0;
  std::vector<float> err(static_cast<size_t>(R * B));  // [R, B]
  for (int64_t r = r0; r < r1; ++r) {
    float* wr = q.w + r * n;
    for (int64_t j = i1; j < i2; ++j) {
      if (q.p->structured() && (j - i1) % q.p->m == 0) select_group_mask(q, r, j);
      const float* u = q.U + j * n;
      const float target = q.pruned[r * n + j] ? 0.0f : wr[j];
      const float e = (wr[j] - target) / u[j];
      err[static_cast<size_t>((r - r0) * B + (j - i1))] = e;
      wr[j] = target;
      if (e != 0)
        for (int64_t k = j + 1; k < i2; ++k) wr[k] -= e * u[k];
    }
  }
  // W[:, i2:] -= Err[:, :B] U[i1:i2, i2:].
  if (i2 < n) gemm(R, n - i2, B, -1.0f, err.data(), B, q.U + i1 * n + i2, n, q.w + r0 * n + i2, n);
}

}  // namespace

double sparsegpt_prune(float* w, int64_t n_out, int64_t n_in, const float* gram, const SparsityPattern& p,
                       const SparseGptOptions& o, uint8_t* pruned, ThreadPool* pool) {
  check_pattern_fits(p, n_in, "SparseGPT");
  STRATA_CHECK(n_out > 0 && n_in > 0 && o.damp >= 0 && o.block > 0);
  std::vector<float> U;
  const double damp = hessian_factor(gram, n_in, o.damp, &U, pool);
  const int64_t unit = p.structured() ? p.m : 1;
  const int64_t block = std::max<int64_t>(1, (o.block + unit - 1) / unit) * unit;
  Problem q{n_out, n_in, &p, U.data(), w, pruned};
  const int64_t n_tasks = (n_out + kRowsPerTask - 1) / kRowsPerTask;
  for (int64_t i1 = 0; i1 < n_in; i1 += block) {
    const int64_t i2 = std::min(n_in, i1 + block);
    if (!p.structured()) select_batch_mask(q, i1, i2);
    auto run = [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t)
        prune_batch_rows(q, t * kRowsPerTask, std::min(n_out, (t + 1) * kRowsPerTask), i1, i2);
    };
    if (pool && pool->size() > 1 && n_tasks > 1)
      pool->parallel_for(n_tasks, 1, [&](int64_t b, int64_t e, int) { run(b, e); });
    else
      run(0, n_tasks);
  }
  return damp;
}

}  // namespace strata::calib
