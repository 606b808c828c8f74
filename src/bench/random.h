// Seeded random numbers for the load generator, reproducible across platforms.
//
// The standard library's distributions (std::exponential_distribution, std::gamma_distribution)
// are implementation-defined, so the same --seed would give different workloads with another
// standard library. Only the raw std::mt19937_64 sequence is fixed by the standard; every
// distribution here is derived from it by our own formulas.
#pragma once

#include <cstdint>
#include <random>

namespace strata::bench {

class Random {
 public:
  explicit Random(uint64_t seed) : engine_(seed) {}

  // Uniform in [0, 1) with 53 random bits.
  double uniform();
  // Uniform integer in [lo, hi] (inclusive); lo <= hi.
  int64_t uniform_int(int64_t lo, int64_t hi);
  // Standard normal (Marsaglia's polar method).
  double normal();
  // Exponential with the given rate (mean 1/rate); rate > 0.
  double exponential(double rate);
  // Gamma with shape k > 0 and scale theta > 0 (mean k*theta, variance k*theta^2),
  // Marsaglia-Tsang squeeze method; shape < 1 is boosted to shape + 1 and rescaled by U^(1/k).
  double gamma(double shape, double scale);

 private:
  std::mt19937_64 engine_;
};

}  // namespace strata::bench
