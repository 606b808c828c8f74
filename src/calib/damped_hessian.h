// The damped layer Hessian that GPTQ's follow-up passes (the scale refit, the level descent)
// measure a quantized row's output error with: H = X^T X of the calibration inputs, columns the
// calibration never excited given unit curvature and no coupling to the others, plus
// damp * mean(diag H) on the diagonal (GPTQ's damping, the dead columns counting as 1 in the
// mean). The damping pulls every fit toward the plain weight error, so a small calibration set
// cannot overfit it.
#pragma once

#include <cstdint>
#include <vector>

namespace strata::calib {

// gram: [n_in, n_in] symmetric (sum of x x^T over the calibration rows). Returns [n_in, n_in].
std::vector<float> damped_hessian(const float* gram, int64_t n_in, double damp);

}  // namespace strata::calib
