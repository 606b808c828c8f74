// How far a layer's output moves when its weights change, as the calibration methods and the
// quantize summary measure it: for a weight error D [rows, n], the summed squared output error
// over the calibration inputs is sum_r D_r^T H D_r with H = E[x x^T] (the mean Gram matrix), or
// its diagonal (the importance matrix) when only that is known.
#pragma once

#include <cstdint>
#include <vector>

#include "calib/weight_matrix.h"

namespace strata {
class ThreadPool;
}

namespace strata::calib {

// Rows spread evenly over [0, n_out), at most max_rows of them (all when max_rows <= 0).
std::vector<int64_t> sample_rows(int64_t n_out, int64_t max_rows);

// sum_r D_r^T H D_r for D: [n_rows, in.n].
double quadratic_error(const float* D, int64_t n_rows, const InputStats& in, ThreadPool* pool);

// sum over the sampled rows of the error of w_new against w_ref, divided by the same form of
// w_ref (the relative output error). w_ref, w_new: [n_out, in.n].
double relative_output_error(const float* w_ref, const float* w_new, int64_t n_out, const InputStats& in,
                             int64_t max_rows, ThreadPool* pool);

}  // namespace strata::calib
