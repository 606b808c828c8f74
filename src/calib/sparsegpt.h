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
// Joint pruning and quantization (the paper's 3.5) is not done: `strata prune --type` prunes and
// then rounds the kept weights.
#pragma once

#include <cstdint>

#include "calib/pruning.h"

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

}  // namespace strata::calib
