// SparseGPT (Frantar & Alistarh 2023, "SparseGPT: Massive Language Models Can Be Accurately
// Pruned in One-Shot"): pruning with the error of every removed weight compensated on the
// weights not yet visited, by the same machinery as GPTQ (gptq.h). H = X^T X of the layer's
// input plus damp * mean(diag H) on the diagonal; U upper triangular with U^T U = H^-1
// (linalg.h). Columns are visited left to right in lazy batches of `block` columns:
//
//   at the start of a batch (unstructured), the mask of the whole batch [n_out, block] is chosen
//   jointly over all its rows: the round(s * n_out * block) lowest w^2 / U_jj^2 (the OBS saliency
//   with the current, already compensated weights), so the sparsity is exact per batch and may
//   vary between rows ("adaptive mask selection");
//   N:M: at every group of M columns, per row the N lowest saliencies of the group;
//   then for each column j: err = (w_j - q_j) / U_jj with q_j = 0 where pruned, w_j otherwise,
//   and w_k -= err * U_jk for the batch's columns k > j; at the batch's end one matrix product
//   carries the batch's errors to every column on its right.
//
// Deviations from the reference code: exactly round(s * numel) weights per batch (its `<=`
// threshold takes one more); a column the calibration never excited gets an identity curvature
// (as gptq.h does) instead of being zeroed outright, so the mask is the only source of zeros.
//
// Joint pruning and quantization (the paper's section 3.5, sparsegpt_prune_quantize): the
// prune-only pass above chooses the mask (adaptively, as the paper does); then the same pass runs
// again from the original weights with that mask fixed, where a kept weight's target is its value
// rounded to its GGUF block's grid, so rounding errors are compensated like pruning errors. Its
// batches are whole blocks. A block's parameters (scales) are chosen by the type's quantizer,
// weighted by the damped diag(H), at the block's first column (as GPTQ does, gptq.h), from the
// block's weights as a prune-only pass over it would leave them: compensation moves the kept
// weights far more than rounding does, and parameters fitted before it clip them (measured:
// worse than pruning, then rounding). A pruned weight must stay exactly 0, so only types whose
// every block holds an exact 0 qualify (the symmetric ones: Q4_0, Q5_0, Q8_0, Q3_K, Q6_K, MXFP4,
// ...; not Q4_1 or Q4_K, whose mins shift the grid).
#pragma once

#include <cstdint>

#include "calib/pruning.h"
#include "core/tensor_type.h"

namespace strata {
class ThreadPool;
}

namespace strata::calib {

struct SparseGptOptions {
  double damp = 0.01;   // fraction of mean(diag H) added to the diagonal
  int64_t block = 128;  // lazy batch / mask selection block, in columns (rounded up to whole groups of M)
};

// w: [n_out, n_in] f32, pruned and compensated in place; gram: [n_in, n_in] symmetric (X^T X, or
// any positive multiple); pruned: [n_out, n_in] out, 1 where a weight was zeroed. Throws
// strata::Error when the rows do not split into the pattern's groups or the Hessian stays
// singular after raising the damping. Returns the damping used.
double sparsegpt_prune(float* w, int64_t n_out, int64_t n_in, const float* gram, const SparsityPattern& p,
                       const SparseGptOptions& options, uint8_t* pruned, ThreadPool* pool);

// True when sparsegpt_prune_quantize can produce `type`: a quantized type with a per-element grid
// (quant/block_grid.h) whose blocks represent 0 exactly.
bool sparsegpt_can_quantize(TensorType type);

// sparsegpt_prune, quantizing as it goes: w: [n_out, n_in] f32, left holding the values of out
// (dequantized); out: n_out rows of `type` (row_bytes(type, n_in) each) whose pruned elements
// are exactly 0. Throws strata::Error as
// sparsegpt_prune does, and for a type sparsegpt_can_quantize rejects or rows that do not split
// into its blocks. Returns the damping used.
double sparsegpt_prune_quantize(TensorType type, float* w, int64_t n_out, int64_t n_in, const float* gram,
                                const SparsityPattern& p, const SparseGptOptions& options, uint8_t* pruned,
                                void* out, ThreadPool* pool);

}  // namespace strata::calib
