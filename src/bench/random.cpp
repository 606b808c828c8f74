#include "bench/random.h"

#include <cmath>

#include "core/check.h"

namespace strata::bench {

double Random::uniform() {
  return static_cast<double>(engine_() >> 11) * 0x1.0p-53;
}

int64_t Random::uniform_int(int64_t lo, int64_t hi) {
  STRATA_CHECK(lo <= hi, "uniform_int: empty range");
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  if (span == 0) return static_cast<int64_t>(engine_());  // full 64-bit range
  // Rejection sampling removes the modulo bias.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % span;
  uint64_t x;
  do {
    x = engine_();
  } while (x >= limit);
  return lo + static_cast<int64_t>(x % span);
}

double Random::normal() {
  for (;;) {
    const double u = 2.0 * uniform() - 1.0;
    const double v = 2.0 * uniform() - 1.0;
    const double s = u * u + v * v;
    if (s > 0.0 && s < 1.0) return u * std::sqrt(-2.0 * std::log(s) / s);
  }
}

double Random::exponential(double rate) {
  STRATA_CHECK(rate > 0.0, "exponential: rate must be positive");
  // 1 - U lies in (0, 1], so the logarithm is finite.
  return -std::log(1.0 - uniform()) / rate;
}

double Random::gamma(double shape, double scale) {
  STRATA_CHECK(shape > 0.0 && scale > 0.0, "gamma: shape and scale must be positive");
  if (shape < 1.0) {
    // Gamma(k) = Gamma(k + 1) * U^(1/k) for k < 1.
    const double u = 1.0 - uniform();
    return gamma(shape + 1.0, scale) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = 1.0 - uniform();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v * scale;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v * scale;
  }
}

}  // namespace strata::bench
