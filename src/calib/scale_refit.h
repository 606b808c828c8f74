// Least-squares refit of block scales after GPTQ.
//
// Once GPTQ has fixed every element's level, each block's values are (level-dependent constants)
// times the block's f16 scale (and min): multiplying those fields by a factor s_b scales all the
// block's values by s_b. The layer's output error over the calibration inputs,
//   sum over rows of (w - sum_b s_b v_b)^T H (w - sum_b s_b v_b),
// is a quadratic in the factors of a row, so the best factors solve one small linear system per
// row (n_blocks unknowns). GPTQ chose each block's scale from the weights before the errors of
// the later blocks were fed back into it; the refit lets every scale see the whole row.
//
// H is damped exactly as GPTQ damps it (damp * mean(diag H) on the diagonal): the damping pulls
// the fit toward the plain weight error, so a small calibration set cannot overfit it. A row's
// new scales are kept only when, after f16 rounding, they lower that row's damped error.
#pragma once

#include <cstdint>

#include "core/tensor_type.h"

namespace strata {
class ThreadPool;
}

namespace strata::calib {

struct ScaleRefitReport {
  int64_t rows = 0, rows_changed = 0;
  double error_before = 0, error_after = 0;  // sum over rows of the damped quadratic error
};

// Types whose block values are linear in f16 fields of the block (Q4_0 ... Q6_K, IQ4_NL/XS, TQ).
bool has_refittable_scales(TensorType type);

// w: [n_out, n_in] the weights GPTQ quantized; gram: [n_in, n_in] symmetric (sum of x x^T);
// q: n_out rows of `type` (row_bytes(type, n_in) each), rewritten in place.
ScaleRefitReport refit_block_scales(TensorType type, const float* w, int64_t n_out, int64_t n_in,
                                    const float* gram, double damp, void* q, ThreadPool* pool);

}  // namespace strata::calib
