#include "calib/damped_hessian.h"

#include <cmath>

#include "core/check.h"

namespace strata::calib {

std::vector<float> damped_hessian(const float* gram, int64_t n_in, double damp) {
  STRATA_CHECK(n_in > 0 && damp >= 0);
  std::vector<char> dead(static_cast<size_t>(n_in));
  double mean_diag = 0;
  for (int64_t i = 0; i < n_in; ++i) {
    const float d = gram[i * n_in + i];
    dead[static_cast<size_t>(i)] = !(std::isfinite(d) && d > 0);
    mean_diag += dead[static_cast<size_t>(i)] ? 1.0 : d;
  }
  mean_diag /= static_cast<double>(n_in);
  std::vector<float> H(static_cast<size_t>(n_in * n_in));
  for (int64_t i = 0; i < n_in; ++i)
    for (int64_t j = 0; j < n_in; ++j) {
      const float v = gram[i * n_in + j];
      const bool zero = dead[static_cast<size_t>(i)] || dead[static_cast<size_t>(j)] || !std::isfinite(v);
      H[static_cast<size_t>(i * n_in + j)] = zero ? 0.0f : v;
    }
  for (int64_t i = 0; i < n_in; ++i)
    H[static_cast<size_t>(i * n_in + i)] +=
        static_cast<float>((dead[static_cast<size_t>(i)] ? 1.0 : 0.0) + damp * mean_diag);
  return H;
}

}  // namespace strata::calib
