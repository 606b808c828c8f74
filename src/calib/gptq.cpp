#include "calib/gptq.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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

constexpr int64_t kRowsPerTask = 32;
constexpr int kDampRetries = 4;

struct Problem {
  TensorType type;
  int64_t n_out, n_in, block;
  size_t row_bytes, block_bytes;
  const float* w;             // [n_out, n_in]
  std::vector<int64_t> perm;  // [n_in] position -> column
  std::vector<int64_t> pos;   // [n_in] column -> position
  std::vector<float> U;       // [n_in, n_in] upper factor, in processing order
  std::vector<float> imp;     // [n_in] diag(H) per column (block parameter weights)
  int64_t batch;              // columns per lazy batch (whole blocks)
  int param_candidates;       // clip ratios tried for each block's parameters
};

// GPTQ's loss over one block's columns for a row (the sum of squared scaled errors the column
// loop accumulates there, with the error fed forward inside the block), were the block quantized
// with `grids`. cur: [B] the row's current values at positions b0 .. b0 + B.
double block_loss(const Problem& p, const float* cur, const ElementGrid* grids, int64_t b0, int64_t blk) {
  const int64_t B = p.block, n = p.n_in;
  float tmp[kQK_K];
  std::copy(cur, cur + B, tmp);
  double loss = 0;
  for (int64_t jj = 0; jj < B; ++jj) {
    const int64_t j = b0 + jj;
    const float* u = p.U.data() + j * n + b0;
    const ElementGrid& g = grids[p.perm[static_cast<size_t>(j)] - blk * B];
    const float q = grid_value(g, nearest_level(g, tmp[jj]));
    const float er = (tmp[jj] - q) / u[jj];
    loss += static_cast<double>(er) * er;
    for (int64_t kk = jj + 1; kk < B; ++kk) tmp[kk] -= er * u[kk];
  }
  return loss;
}

// The parameters of block `blk` of a row: the type's quantizer on the current weights, clipped
// to a few ratios of their largest magnitude, keeping the candidate with the least block loss.
// vals: [B] current values in the block's element order; cur: the same in processing order.
void choose_block_params(const Problem& p, const float* vals, const float* cur, int64_t b0, int64_t blk,
                         uint8_t* dst, ElementGrid* grids) {
  const int64_t B = p.block;
  quantize_row(p.type, vals, dst, B, p.imp.data() + blk * B);
  block_grids(p.type, dst, grids);
  if (p.param_candidates <= 1) return;
  float amax = 0;
  for (int64_t e = 0; e < B; ++e) amax = std::max(amax, std::fabs(vals[e]));
  if (amax == 0) return;
  double best = block_loss(p, cur, grids, b0, blk);
  uint8_t cand[512];
  ElementGrid cand_grids[kQK_K];
  float clipped[kQK_K];
  for (int c = 1; c < p.param_candidates; ++c) {
    const float lim = amax * (1.0f - 0.05f * static_cast<float>(c));
    for (int64_t e = 0; e < B; ++e) clipped[e] = std::clamp(vals[e], -lim, lim);
    quantize_row(p.type, clipped, cand, B, p.imp.data() + blk * B);
    block_grids(p.type, cand, cand_grids);
    const double loss = block_loss(p, cur, cand_grids, b0, blk);
    if (loss < best) {
      best = loss;
      std::memcpy(dst, cand, p.block_bytes);
      std::copy(cand_grids, cand_grids + B, grids);
    }
  }
}

// Rows [r0, r1) through every column.
void quantize_rows_slab(const Problem& p, int64_t r0, int64_t r1, uint8_t* out) {
  const int64_t R = r1 - r0, n = p.n_in, B = p.block;
  std::vector<float> W(static_cast<size_t>(R * n));  // [R, n] in processing order
  for (int64_t r = 0; r < R; ++r)
    for (int64_t a = 0; a < n; ++a)
      W[static_cast<size_t>(r * n + a)] = p.w[(r0 + r) * n + p.perm[static_cast<size_t>(a)]];
  std::vector<float> err(static_cast<size_t>(R * p.batch));  // [R, batch]
  std::vector<ElementGrid> grids(static_cast<size_t>(R * B));
  std::vector<int> levels(static_cast<size_t>(R * B));
  std::vector<float> vals(static_cast<size_t>(B));

  for (int64_t i1 = 0; i1 < n; i1 += p.batch) {
    const int64_t i2 = std::min(n, i1 + p.batch);
    for (int64_t b0 = i1; b0 < i2; b0 += B) {
      const int64_t blk = p.perm[static_cast<size_t>(b0)] / B;  // the original block these columns form
      // Block parameters from the current weights, in the block's own element order.
      for (int64_t r = 0; r < R; ++r) {
        for (int64_t e = 0; e < B; ++e)
          vals[static_cast<size_t>(e)] =
              W[static_cast<size_t>(r * n + p.pos[static_cast<size_t>(blk * B + e)])];
        uint8_t* dst =
            out + static_cast<size_t>(r0 + r) * p.row_bytes + static_cast<size_t>(blk) * p.block_bytes;
        choose_block_params(p, vals.data(), W.data() + r * n + b0, b0, blk, dst, grids.data() + r * B);
      }
      for (int64_t j = b0; j < b0 + B; ++j) {
        const int64_t e = p.perm[static_cast<size_t>(j)] - blk * B;
        const float* u = p.U.data() + j * n;
        const float d = u[j];
        for (int64_t r = 0; r < R; ++r) {
          float* wr = W.data() + r * n;
          const ElementGrid& g = grids[static_cast<size_t>(r * B + e)];
          const int l = nearest_level(g, wr[j]);
          levels[static_cast<size_t>(r * B + e)] = l;
          const float q = grid_value(g, l);
          const float er = (wr[j] - q) / d;
          err[static_cast<size_t>(r * p.batch + (j - i1))] = er;
          wr[j] = q;
          for (int64_t k = j + 1; k < i2; ++k) wr[k] -= er * u[k];
        }
      }
      for (int64_t r = 0; r < R; ++r)
        set_block_levels(
            p.type,
            out + static_cast<size_t>(r0 + r) * p.row_bytes + static_cast<size_t>(blk) * p.block_bytes,
            levels.data() + r * B);
    }
    // Everything right of the batch: W[:, i2:] -= Err[:, :i2-i1] U[i1:i2, i2:].
    if (i2 < n)
      gemm(R, n - i2, i2 - i1, -1.0f, err.data(), p.batch, p.U.data() + i1 * n + i2, n, W.data() + i2, n);
  }
}

}  // namespace

void gptq_column_order(const double* diag, int64_t n_in, int64_t block, bool act_order, int64_t* perm) {
  std::iota(perm, perm + n_in, int64_t{0});
  if (!act_order) return;
  const int64_t n_blocks = n_in / block;
  std::vector<double> mass(static_cast<size_t>(n_blocks), 0.0);
  for (int64_t i = 0; i < n_in; ++i) mass[static_cast<size_t>(i / block)] += diag[i];
  std::vector<int64_t> order(static_cast<size_t>(n_blocks));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return mass[a] > mass[b]; });
  int64_t k = 0;
  for (int64_t blk : order) {
    int64_t* cols = perm + k;
    std::iota(cols, cols + block, blk * block);
    std::stable_sort(cols, cols + block, [&](int64_t a, int64_t b) { return diag[a] > diag[b]; });
    k += block;
  }
}

double gptq_quantize(TensorType type, const float* w, int64_t n_out, int64_t n_in, const float* gram,
                     const GptqOptions& o, void* out, ThreadPool* pool) {
  if (!has_block_grid(type) || !can_quantize(type))
    STRATA_THROW("GPTQ cannot quantize to ", type_name(type), " (no per-element grid)");
  const int64_t B = type_traits(type).block_size;
  if (n_in % B != 0)
    STRATA_THROW("GPTQ: rows of ", n_in, " elements are not a whole number of ", type_name(type), " blocks");
  STRATA_CHECK(n_out > 0 && o.damp >= 0);
  Problem p;
  p.type = type;
  p.n_out = n_out;
  p.n_in = n_in;
  p.block = B;
  p.row_bytes = row_bytes(type, n_in);
  p.block_bytes = type_traits(type).block_bytes;
  p.w = w;
  p.batch = std::max<int64_t>(1, (o.batch + B - 1) / B) * B;
  p.param_candidates = std::max(1, o.param_candidates);

  std::vector<double> diag(static_cast<size_t>(n_in));
  double mean_diag = 0;
  for (int64_t i = 0; i < n_in; ++i) {
    const double d = gram[i * n_in + i];
    diag[static_cast<size_t>(i)] = std::isfinite(d) && d > 0 ? d : 0.0;
    mean_diag +=
        diag[static_cast<size_t>(i)] > 0 ? diag[static_cast<size_t>(i)] : 1.0;  // dead columns count as 1
  }
  mean_diag /= static_cast<double>(n_in);
  p.perm.resize(static_cast<size_t>(n_in));
  gptq_column_order(diag.data(), n_in, B, o.act_order, p.perm.data());
  p.pos.resize(static_cast<size_t>(n_in));
  for (int64_t a = 0; a < n_in; ++a) p.pos[static_cast<size_t>(p.perm[static_cast<size_t>(a)])] = a;
  p.imp.assign(diag.begin(), diag.end());

  double damp = o.damp;
  std::vector<double> H;
  for (int attempt = 0;; ++attempt) {
    H.assign(static_cast<size_t>(n_in * n_in), 0.0);
    for (int64_t a = 0; a < n_in; ++a) {
      const int64_t ca = p.perm[static_cast<size_t>(a)];
      for (int64_t b = 0; b < n_in; ++b) {
        const double v = gram[ca * n_in + p.perm[static_cast<size_t>(b)]];
        H[static_cast<size_t>(a * n_in + b)] = std::isfinite(v) ? v : 0.0;
      }
    }
    for (int64_t a = 0; a < n_in; ++a) {
      // A column the calibration never excited has no curvature: give it an identity one so it
      // neither receives nor sends error.
      if (diag[static_cast<size_t>(p.perm[static_cast<size_t>(a)])] == 0) {
        for (int64_t b = 0; b < n_in; ++b)
          H[static_cast<size_t>(a * n_in + b)] = H[static_cast<size_t>(b * n_in + a)] = 0;
        H[static_cast<size_t>(a * n_in + a)] = 1.0;
      }
      H[static_cast<size_t>(a * n_in + a)] += damp * mean_diag;
    }
    if (inverse_upper_factor(H, n_in, &p.U, pool)) break;
    if (attempt + 1 == kDampRetries)
      STRATA_THROW("GPTQ: the Hessian is not positive definite even with damping ", damp);
    damp = std::max(damp * 10, 1e-3);
  }

  auto* dst = static_cast<uint8_t*>(out);
  for_each_row_slab(pool, n_out, kRowsPerTask,
                    [&](int64_t r0, int64_t r1, int) { quantize_rows_slab(p, r0, r1, dst); });
  return damp;
}

}  // namespace strata::calib
