#include "calib/scale_refit.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "calib/damped_hessian.h"
#include "calib/dense_gemm.h"
#include "calib/linalg.h"
#include "calib/row_slabs.h"
#include "core/check.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "quant/quantize.h"

namespace strata::calib {
namespace {

constexpr int64_t kRowsPerTask = 16;
constexpr int kMaxFields = 2;
// A factor outside this range means the system was ill-conditioned, not that the scale was off.
constexpr double kMinFactor = 0.5, kMaxFactor = 2.0;

// Byte offsets of the f16 fields that every value of a block is proportional to (ggml's layouts,
// quant/blocks.h): the scale, and for the affine types the min as well.
struct ScaleFields {
  int count = 0;
  int offset[kMaxFields] = {0, 0};
};

ScaleFields scale_fields(TensorType type) {
  switch (type) {
    case TensorType::Q4_0:
    case TensorType::Q5_0:
    case TensorType::Q8_0:
    case TensorType::IQ4_NL:
    case TensorType::IQ4_XS:
      return {1, {0, 0}};
    case TensorType::Q4_1:
    case TensorType::Q5_1:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
      return {2, {0, 2}};
    case TensorType::Q2_K:
      return {2, {80, 82}};
    case TensorType::Q3_K:
      return {1, {108, 0}};
    case TensorType::Q6_K:
      return {1, {208, 0}};
    case TensorType::TQ1_0:
      return {1, {52, 0}};
    case TensorType::TQ2_0:
      return {1, {64, 0}};
    default:
      return {};
  }
}

float read_f16(const uint8_t* p) {
  fp16_t h;
  std::memcpy(&h, p, sizeof h);
  return fp16_to_f32(h);
}

void write_f16(uint8_t* p, float v) {
  const fp16_t h = f32_to_fp16(v);
  std::memcpy(p, &h, sizeof h);
}

struct Problem {
  TensorType type;
  ScaleFields fields;
  int64_t n_in, block, n_blocks;
  size_t row_bytes, block_bytes;
  const float* w;        // [n_out, n_in]
  std::vector<float> H;  // [n_in, n_in] damped
  uint8_t* q;            // [n_out] rows of type
};

// Multiplies the f16 fields of every block b of `row` by factor[b].
void scale_row(const Problem& p, uint8_t* row, const double* factor) {
  for (int64_t b = 0; b < p.n_blocks; ++b) {
    uint8_t* blk = row + static_cast<size_t>(b) * p.block_bytes;
    for (int f = 0; f < p.fields.count; ++f) {
      uint8_t* field = blk + p.fields.offset[f];
      write_f16(field, static_cast<float>(read_f16(field) * factor[b]));
    }
  }
}

// Solves (A + ridge) x = g in place of x by Cholesky; false when A is not usable.
bool solve_spd(const double* A, const double* g, int64_t nb, std::vector<double>& L, double* x) {
  double trace = 0;
  for (int64_t b = 0; b < nb; ++b) trace += A[b * nb + b];
  if (!(trace > 0)) return false;
  // A is a Gram matrix (positive semi-definite); a tiny ridge keeps all-zero blocks solvable.
  std::copy(A, A + nb * nb, L.begin());
  for (int64_t b = 0; b < nb; ++b)
    L[static_cast<size_t>(b * nb + b)] += 1e-9 * trace / static_cast<double>(nb);
  if (!cholesky_lower(L.data(), nb, nullptr)) return false;
  for (int64_t i = 0; i < nb; ++i) {
    double s = g[i];
    for (int64_t k = 0; k < i; ++k) s -= L[static_cast<size_t>(i * nb + k)] * x[k];
    x[i] = s / L[static_cast<size_t>(i * nb + i)];
  }
  for (int64_t i = nb - 1; i >= 0; --i) {
    double s = x[i];
    for (int64_t k = i + 1; k < nb; ++k) s -= L[static_cast<size_t>(k * nb + i)] * x[k];
    x[i] = s / L[static_cast<size_t>(i * nb + i)];
  }
  for (int64_t i = 0; i < nb; ++i)
    if (!std::isfinite(x[i])) return false;
  return true;
}

// Rows [r0, r1). With E = w - v the error before and D the change of v, the error after is
// before - 2 D.HE + D.HD; the per-row system is A x = g with A[b][c] = v_b^T H v_c and
// g[b] = v_b^T H E (v_b: the row's values in block b, zero elsewhere).
void refit_slab(const Problem& p, int64_t r0, int64_t r1, ScaleRefitReport* rep) {
  const int64_t R = r1 - r0, n = p.n_in, B = p.block, nb = p.n_blocks;
  const size_t RN = static_cast<size_t>(R * n);
  std::vector<float> V(RN), E(RN), HE(RN, 0.0f), U(RN);  // [R, n] each
  uint8_t* rows = p.q + static_cast<size_t>(r0) * p.row_bytes;
  for (int64_t r = 0; r < R; ++r) {
    dequantize_row(p.type, rows + static_cast<size_t>(r) * p.row_bytes, V.data() + r * n, n);
    for (int64_t i = 0; i < n; ++i) E[r * n + i] = p.w[(r0 + r) * n + i] - V[r * n + i];
  }
  gemm(R, n, n, 1.0f, E.data(), n, p.H.data(), n, HE.data(), n);

  std::vector<double> A(static_cast<size_t>(R * nb * nb)), g(static_cast<size_t>(R * nb));
  auto block_dot = [&](const std::vector<float>& X, int64_t r, int64_t b) {
    double s = 0;
    for (int64_t i = b * B; i < (b + 1) * B; ++i) s += static_cast<double>(V[r * n + i]) * X[r * n + i];
    return s;
  };
  for (int64_t c = 0; c < nb; ++c) {
    std::fill(U.begin(), U.end(), 0.0f);
    gemm(R, n, B, 1.0f, V.data() + c * B, n, p.H.data() + c * B * n, n, U.data(), n);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t b = 0; b < nb; ++b) A[static_cast<size_t>((r * nb + b) * nb + c)] = block_dot(U, r, b);
  }
  for (int64_t r = 0; r < R; ++r)
    for (int64_t b = 0; b < nb; ++b) g[static_cast<size_t>(r * nb + b)] = block_dot(HE, r, b);

  const std::vector<uint8_t> saved(rows, rows + static_cast<size_t>(R) * p.row_bytes);
  std::vector<double> L(static_cast<size_t>(nb * nb)), x(static_cast<size_t>(nb));
  for (int64_t r = 0; r < R; ++r) {
    if (!solve_spd(A.data() + r * nb * nb, g.data() + r * nb, nb, L, x.data())) continue;
    for (double& f : x) f = std::clamp(1.0 + f, kMinFactor, kMaxFactor);
    scale_row(p, rows + static_cast<size_t>(r) * p.row_bytes, x.data());
  }

  // The exact change of each row's error with the rounded fields; rows it does not lower go back.
  std::vector<float>& D = U;
  std::vector<float> HD(RN, 0.0f);
  for (int64_t r = 0; r < R; ++r) {
    dequantize_row(p.type, rows + static_cast<size_t>(r) * p.row_bytes, D.data() + r * n, n);
    for (int64_t i = 0; i < n; ++i) D[r * n + i] -= V[r * n + i];
  }
  gemm(R, n, n, 1.0f, D.data(), n, p.H.data(), n, HD.data(), n);
  for (int64_t r = 0; r < R; ++r) {
    double before = 0, change = 0;
    for (int64_t i = 0; i < n; ++i) {
      before += static_cast<double>(E[r * n + i]) * HE[r * n + i];
      change += static_cast<double>(D[r * n + i]) * (HD[r * n + i] - 2.0 * HE[r * n + i]);
    }
    const bool moved = std::memcmp(rows + static_cast<size_t>(r) * p.row_bytes,
                                   saved.data() + static_cast<size_t>(r) * p.row_bytes, p.row_bytes) != 0;
    if (moved && change < 0) {
      ++rep->rows_changed;
      rep->error_after += before + change;
    } else {
      std::memcpy(rows + static_cast<size_t>(r) * p.row_bytes,
                  saved.data() + static_cast<size_t>(r) * p.row_bytes, p.row_bytes);
      rep->error_after += before;
    }
    rep->error_before += before;
  }
  rep->rows += R;
}

}  // namespace

bool has_refittable_scales(TensorType type) {
  return scale_fields(type).count > 0;
}

ScaleRefitReport refit_block_scales(TensorType type, const float* w, int64_t n_out, int64_t n_in,
                                    const float* gram, double damp, void* q, ThreadPool* pool) {
  Problem p;
  p.type = type;
  p.fields = scale_fields(type);
  STRATA_CHECK(p.fields.count > 0 && n_out > 0 && damp >= 0);
  p.block = type_traits(type).block_size;
  STRATA_CHECK(n_in % p.block == 0);
  p.n_in = n_in;
  p.n_blocks = n_in / p.block;
  p.row_bytes = row_bytes(type, n_in);
  p.block_bytes = type_traits(type).block_bytes;
  p.w = w;
  p.q = static_cast<uint8_t*>(q);

  p.H = damped_hessian(gram, n_in, damp);

  std::vector<ScaleRefitReport> per(static_cast<size_t>(row_slab_workers(pool)));
  for_each_row_slab(pool, n_out, kRowsPerTask, [&](int64_t r0, int64_t r1, int worker) {
    refit_slab(p, r0, r1, &per[static_cast<size_t>(worker)]);
  });
  ScaleRefitReport total;
  for (const ScaleRefitReport& r : per) {
    total.rows += r.rows;
    total.rows_changed += r.rows_changed;
    total.error_before += r.error_before;
    total.error_after += r.error_after;
  }
  return total;
}

}  // namespace strata::calib
