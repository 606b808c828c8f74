// Coordinate descent on the quantization levels after GPTQ (after CDQuant, Nair & Suggala 2024,
// "CDQuant: Greedy Coordinate Descent for Accurate LLM Quantization").
//
// With every block's parameters (scales, mins) fixed, each element can take one of its grid's
// values, and a row's output error over the calibration inputs is the quadratic
//   L(v) = (v - w)^T H (v - w)
// with H the damped Hessian (calib/damped_hessian.h). GPTQ picks the levels greedily, one column
// at a time, each choice final; no single element of its result is in general at its best level
// given all the others. Changing element i by delta changes L by
//   2 delta g_i + delta^2 H_ii,   g = H (v - w),
// which, over the grid, is least at the level nearest to v_i - g_i / H_ii (a convex parabola in
// the value). The descent sweeps the columns in order, moves each element to that level when it
// lowers L, and updates g by delta * H[:, i]; it stops after a sweep with no move or after
// `max_sweeps`. L never rises, so it ends at or below GPTQ's error, at a point where no single
// element can move down. CDQuant picks the best coordinate of the whole row at each step
// (greedy); sweeping in order costs one pass over the row per sweep instead of one per move, and
// ends at the same kind of point.
//
// Only the levels change: the block parameters and layout stay as they were, so the result is
// a valid block layout of the same type. The scale refit (calib/scale_refit.h) is the other half
// of the alternation: levels given the scales here, scales given the levels there.
#pragma once

#include <cstdint>

#include "core/tensor_type.h"

namespace strata {
class ThreadPool;
}

namespace strata::calib {

struct LevelDescentReport {
  int64_t rows = 0, moves = 0;
  double error_before = 0, error_after = 0;  // sum over rows of the damped quadratic error
};

// w: [n_out, n_in] the target weights; gram: [n_in, n_in] symmetric (sum of x x^T); q: n_out
// rows of `type` (row_bytes(type, n_in) each, a type with a block grid), rewritten in place.
LevelDescentReport descend_levels(TensorType type, const float* w, int64_t n_out, int64_t n_in,
                                  const float* gram, double damp, int max_sweeps, void* q, ThreadPool* pool);

}  // namespace strata::calib
