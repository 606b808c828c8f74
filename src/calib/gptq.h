// GPTQ (Frantar et al. 2022, "GPTQ: Accurate Post-Training Quantization for Generative
// Pre-trained Transformers") where the quantization group is the GGUF block, so the result is an
// exact block layout of any quantized GGUF type.
//
// Columns are quantized one at a time; the error of each is spread over the columns not yet
// quantized through the upper Cholesky factor U of the damped inverse Hessian (H = X^T X of the
// layer's input, plus damp * mean(diag H) on the diagonal). Lazy batches of columns keep the
// updates local: inside a batch, rank-one updates of its own columns; at its end, one matrix
// product updates everything to the right.
//
// At the first column of every GGUF block, each row's block parameters (scales, mins, ...) are
// chosen by the type's own quantizer from the block's current (already error-corrected) weights,
// weighted by diag(H), among a few clip ratios by the GPTQ loss of the block's columns; every
// element of the block is then rounded to the nearest value those
// parameters allow (quant/block_grid.h) and the levels written into the block. Batches are whole
// blocks, so a block's columns are all up to date when its parameters are chosen.
//
// Act-order (quantizing high-activation columns first) would scatter a block's columns; here it
// permutes whole blocks instead (by the sum of their diag(H), descending) and the columns inside
// each block (by diag(H), descending), which keeps every block contiguous in the processing order
// and therefore a valid GGUF block.
#pragma once

#include <cstdint>

#include "core/tensor_type.h"

namespace strata {
class ThreadPool;
}

namespace strata::calib {

struct GptqOptions {
  double damp = 0.01;  // fraction of mean(diag H) added to the diagonal
  bool act_order = false;
  int64_t batch = 128;  // lazy batch, in columns (rounded up to whole blocks)
  // Block parameters: the type's quantizer on the block's weights clipped at 1, 0.95, 0.90, ...
  // of their largest magnitude (this many ratios), keeping the one with the least GPTQ loss over
  // the block's columns. 1: the unclipped weights only.
  int param_candidates = 1;
  // After the column pass, refit each block's f16 scale (and min) by least squares over the whole
  // row under the damped Hessian (calib/scale_refit.h), for the types where that is linear.
  bool refit_scales = true;
  // Then this many rounds of coordinate descent on the levels (calib/level_descent.h), each
  // followed by the refit when it is on: levels given the scales, scales given the levels.
  int descent_rounds = 0;
  int descent_sweeps = 8;  // column sweeps per round at most
};

// w: [n_out, n_in] f32; gram: [n_in, n_in] symmetric (sum of x x^T over the calibration rows);
// out: n_out rows of `type`, row_bytes(type, n_in) each. Throws strata::Error for a type without
// a block grid (float types, the IQ2/IQ3/IQ1 types), rows that do not split into its blocks, or
// a Hessian that stays singular after raising the damping. Returns the damping used.
double gptq_quantize(TensorType type, const float* w, int64_t n_out, int64_t n_in, const float* gram,
                     const GptqOptions& options, void* out, ThreadPool* pool);

// The processing order of the columns: identity, or the block-preserving act-order above.
// diag: [n_in] diag(H). Returns perm: [n_in], perm[position] = column.
void gptq_column_order(const double* diag, int64_t n_in, int64_t block, bool act_order, int64_t* perm);

}  // namespace strata::calib
