#include "calib/weight_matrix.h"

#include "core/check.h"

namespace strata::calib {

void InputStats::divide_channels(const std::vector<float>& s) {
  STRATA_CHECK(static_cast<int64_t>(s.size()) == n);
  for (int64_t i = 0; i < n; ++i) {
    const double inv = 1.0 / s[static_cast<size_t>(i)];
    msq[static_cast<size_t>(i)] = static_cast<float>(msq[static_cast<size_t>(i)] * inv * inv);
    mean_abs[static_cast<size_t>(i)] = static_cast<float>(mean_abs[static_cast<size_t>(i)] * inv);
    if (!abs_max.empty())
      abs_max[static_cast<size_t>(i)] = static_cast<float>(abs_max[static_cast<size_t>(i)] * inv);
  }
  if (gram.empty()) return;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      gram[static_cast<size_t>(i * n + j)] =
          static_cast<float>(gram[static_cast<size_t>(i * n + j)] /
                             (static_cast<double>(s[static_cast<size_t>(i)]) * s[static_cast<size_t>(j)]));
}

}  // namespace strata::calib
