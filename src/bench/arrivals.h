// When each request of a benchmark is sent: a Poisson process, optionally made burstier or
// smoother.
//
// Inter-arrival gaps are Gamma(shape = burstiness, scale = 1 / (rate * burstiness)): their mean
// is always 1/rate, their coefficient of variation 1/sqrt(burstiness). Burstiness 1 is the
// exponential distribution (a Poisson process); < 1 is burstier, > 1 more regular. The first
// request goes out at t = 0 and request i at the sum of the first i gaps (the convention of
// vLLM's benchmark_serving). An infinite rate sends everything at t = 0.
#pragma once

#include <cstdint>
#include <vector>

namespace strata::bench {

// Send offsets in seconds from the start of the run, non-decreasing, offsets[0] == 0.
// rate > 0 (may be +infinity), burstiness > 0; throws strata::Error otherwise.
std::vector<double> arrival_offsets(int64_t n, double rate, double burstiness, uint64_t seed);

}  // namespace strata::bench
