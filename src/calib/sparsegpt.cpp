#include "calib/sparsegpt.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "calib/dense_gemm.h"
#include "calib/linalg.h"
#include "calib/row_slabs.h"
#include "core/check.h"
#include "core/thread_pool.h"
#include "quant/block_grid.h"
#include "quant/blocks.h"
#include "quant/quantize.h"

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

// The quantized output of the joint pass.
struct GridTarget {
  TensorType type;
  int64_t block;  // elements per GGUF block
  size_t row_bytes, block_bytes;
  uint8_t* out;            // n_out rows of `type`
  std::vector<float> imp;  // [n_in] damped diag(H): the block quantizer's weights
};

struct Problem {
  int64_t n_out, n_in;
  const SparsityPattern* p;
  const float* U;          // [n_in, n_in]
  float* w;                // [n_out, n_in]
  uint8_t* pruned;         // [n_out, n_in]
  const GridTarget* grid;  // the joint pass's output, or null (prune only)
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

// The joint pass over row r and the columns of batch [i1, i2), with the mask fixed: at each GGUF
// block's first column its parameters, then each element to 0 (pruned) or to its nearest grid
// value, the error fed forward as in prune_batch_rows. err: [i2 - i1] out.
void prune_quantize_row(const Problem& q, int64_t r, int64_t i1, int64_t i2, float* err) {
  const GridTarget& g = *q.grid;
  const int64_t n = q.n_in, B = g.block;
  float* wr = q.w + r * n;
  uint8_t* mk = q.pruned + r * n;
  float vals[kQK_K];
  ElementGrid grids[kQK_K];
  int levels[kQK_K];
  for (int64_t b0 = i1; b0 < i2; b0 += B) {
    uint8_t* dst = g.out + static_cast<size_t>(r) * g.row_bytes + static_cast<size_t>(b0 / B) * g.block_bytes;
    // The parameters must fit the weights as the pruning errors will leave them: compensation
    // moves the kept weights far more than rounding does, and parameters fitted to the weights
    // before it clip them. So the block is first run through the prune-only pass.
    std::copy(wr + b0, wr + b0 + B, vals);
    for (int64_t j = 0; j < B; ++j) {
      const float* u = q.U + (b0 + j) * n + b0;
      const float e = mk[b0 + j] ? vals[j] / u[j] : 0.0f;
      if (e == 0) continue;
      vals[j] = 0.0f;
      for (int64_t k = j + 1; k < B; ++k) vals[k] -= e * u[k];
    }
    quantize_row(g.type, vals, dst, B, g.imp.data() + b0);
    block_grids(g.type, dst, grids);
    for (int64_t j = b0; j < b0 + B; ++j) {
      const ElementGrid& eg = grids[j - b0];
      const int l = nearest_level(eg, mk[j] ? 0.0f : wr[j]);
      const float target = grid_value(eg, l);
      STRATA_CHECK(!mk[j] || target == 0.0f, "a pruned weight's block must hold an exact 0");
      levels[j - b0] = l;
      const float* u = q.U + j * n;
      const float e = (wr[j] - target) / u[j];
      err[j - i1] = e;
      wr[j] = target;
      if (e != 0)
        for (int64_t k = j + 1; k < i2; ++k) wr[k] -= e * u[k];
    }
    set_block_levels(g.type, dst, levels);
  }
}

// Rows [r0, r1) through the columns of batch [i1, i2), then the update right of it.
void prune_batch_rows(const Problem& q, int64_t r0, int64_t r1, int64_t i1, int64_t i2) {
  const int64_t n = q.n_in, B = i2 - i1, R = r1 - r0;
  std::vector<float> err(static_cast<size_t>(R * B));  // [R, B]
  for (int64_t r = r0; r < r1; ++r) {
    if (q.grid) {
      prune_quantize_row(q, r, i1, i2, err.data() + (r - r0) * B);
      continue;
    }
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

// Batches of `block` columns through every row; the masks are chosen as the batches come unless
// the pass is the joint one (q.grid), which keeps the prune-only pass's mask.
void run_batches(const Problem& q, int64_t block, ThreadPool* pool) {
  for (int64_t i1 = 0; i1 < q.n_in; i1 += block) {
    const int64_t i2 = std::min(q.n_in, i1 + block);
    if (!q.p->structured() && !q.grid) select_batch_mask(q, i1, i2);
    for_each_row_slab(pool, q.n_out, kRowsPerTask,
                      [&](int64_t r0, int64_t r1, int) { prune_batch_rows(q, r0, r1, i1, i2); });
  }
}

// The block quantizer's weights: diag(H), damped as H is. [n]
std::vector<float> damped_diagonal(const float* gram, int64_t n, double damp) {
  std::vector<float> imp(static_cast<size_t>(n));
  double mean = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float d = gram[i * n + i];
    imp[static_cast<size_t>(i)] = std::isfinite(d) && d > 0 ? d : 0.0f;
    mean += imp[static_cast<size_t>(i)] > 0 ? imp[static_cast<size_t>(i)] : 1.0;
  }
  for (float& v : imp) v += static_cast<float>(damp * mean / static_cast<double>(n));
  return imp;
}

// Prune only (grid null), or: the prune-only pass on a copy of w for its mask (adaptive, as the
// paper's), then the joint pass from w with that mask into grid->out.
double run_pass(float* w, int64_t n_out, int64_t n_in, const float* gram, const SparsityPattern& p,
                const SparseGptOptions& o, uint8_t* pruned, GridTarget* grid, ThreadPool* pool) {
  check_pattern_fits(p, n_in, "SparseGPT");
  STRATA_CHECK(n_out > 0 && n_in > 0 && o.damp >= 0 && o.block > 0);
  std::vector<float> U;
  const double damp = hessian_factor(gram, n_in, o.damp, &U, pool);
  const int64_t unit = p.structured() ? p.m : 1;
  const int64_t block = std::max<int64_t>(1, (o.block + unit - 1) / unit) * unit;
  if (!grid) {
    run_batches({n_out, n_in, &p, U.data(), w, pruned, nullptr}, block, pool);
    return damp;
  }
  std::vector<float> w_prune(w, w + n_out * n_in);
  run_batches({n_out, n_in, &p, U.data(), w_prune.data(), pruned, nullptr}, block, pool);
  grid->imp = damped_diagonal(gram, n_in, damp);
  const int64_t joint_block = std::max<int64_t>(1, (o.block + grid->block - 1) / grid->block) * grid->block;
  run_batches({n_out, n_in, &p, U.data(), w, pruned, grid}, joint_block, pool);
  return damp;
}

}  // namespace

double sparsegpt_prune(float* w, int64_t n_out, int64_t n_in, const float* gram, const SparsityPattern& p,
                       const SparseGptOptions& o, uint8_t* pruned, ThreadPool* pool) {
  return run_pass(w, n_out, n_in, gram, p, o, pruned, nullptr, pool);
}

bool sparsegpt_can_quantize(TensorType type) {
  if (!has_block_grid(type) || !can_quantize(type)) return false;
  const int64_t B = type_traits(type).block_size;
  if (B > kQK_K) return false;
  // A block of mixed signs, off-centre: a type with mins (Q4_1, Q4_K, ...) shifts its grid off 0.
  float x[kQK_K];
  for (int64_t e = 0; e < B; ++e) x[e] = 0.3f + 0.7f * std::sin(1.7f * static_cast<float>(e) + 0.4f);
  std::vector<uint8_t> blk(type_traits(type).block_bytes);
  quantize_row(type, x, blk.data(), B, nullptr);
  ElementGrid g[kQK_K];
  block_grids(type, blk.data(), g);
  for (int64_t e = 0; e < B; ++e)
    if (grid_value(g[e], nearest_level(g[e], 0.0f)) != 0.0f) return false;
  return true;
}

double sparsegpt_prune_quantize(TensorType type, float* w, int64_t n_out, int64_t n_in, const float* gram,
                                const SparsityPattern& p, const SparseGptOptions& o, uint8_t* pruned,
                                void* out, ThreadPool* pool) {
  if (!sparsegpt_can_quantize(type))
    STRATA_THROW("SparseGPT cannot prune and quantize to ", type_name(type),
                 " in one pass: its blocks do not hold an exact 0");
  const int64_t B = type_traits(type).block_size;
  if (n_in % B != 0)
    STRATA_THROW("SparseGPT: rows of ", n_in, " elements are not a whole number of ", type_name(type),
                 " blocks");
  GridTarget g{type, B, row_bytes(type, n_in), type_traits(type).block_bytes, static_cast<uint8_t*>(out), {}};
  return run_pass(w, n_out, n_in, gram, p, o, pruned, &g, pool);
}

}  // namespace strata::calib
