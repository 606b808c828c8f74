#include "bench/arrivals.h"

#include <cmath>

#include "bench/random.h"
#include "core/check.h"

namespace strata::bench {

std::vector<double> arrival_offsets(int64_t n, double rate, double burstiness, uint64_t seed) {
  if (!(rate > 0.0)) STRATA_THROW("request rate must be positive, got ", rate);
  if (!(burstiness > 0.0) || !std::isfinite(burstiness))
    STRATA_THROW("burstiness must be a positive number, got ", burstiness);
  if (n < 0) STRATA_THROW("number of requests must not be negative");
  std::vector<double> offsets(static_cast<size_t>(n), 0.0);
  if (std::isinf(rate)) return offsets;
  // A separate stream from the workload's so that changing the rate keeps the same prompts.
  Random rng(seed ^ 0x9e3779b97f4a7c15ull);
  const double scale = 1.0 / (rate * burstiness);
  double t = 0.0;
  for (int64_t i = 1; i < n; ++i) {
    t += rng.gamma(burstiness, scale);
    offsets[static_cast<size_t>(i)] = t;
  }
  return offsets;
}

}  // namespace strata::bench
