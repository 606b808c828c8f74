// Arrival times: the gaps follow Gamma(burstiness, 1/(rate*burstiness)) — checked statistically
// with a fixed seed against the distribution's known moments and CDF.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "bench/arrivals.h"
#include "bench/random.h"
#include "core/check.h"

namespace strata::bench {
namespace {

std::vector<double> gaps(const std::vector<double>& offsets) {
  std::vector<double> g;
  for (size_t i = 1; i < offsets.size(); ++i) g.push_back(offsets[i] - offsets[i - 1]);
  return g;
}

struct Moments {
  double mean, cv, skew;
};

Moments moments(const std::vector<double>& x) {
  const double n = static_cast<double>(x.size());
  const double mean = std::accumulate(x.begin(), x.end(), 0.0) / n;
  double m2 = 0, m3 = 0;
  for (double v : x) {
    m2 += (v - mean) * (v - mean);
    m3 += (v - mean) * (v - mean) * (v - mean);
  }
  m2 /= n;
  m3 /= n;
  return {mean, std::sqrt(m2) / mean, m3 / std::pow(m2, 1.5)};
}

TEST(Arrivals, PoissonGapsAreExponential) {
  const double rate = 50.0;
  const auto offsets = arrival_offsets(20001, rate, 1.0, 42);
  ASSERT_EQ(offsets.size(), 20001u);
  EXPECT_EQ(offsets[0], 0.0);
  EXPECT_TRUE(std::is_sorted(offsets.begin(), offsets.end()));
  std::vector<double> g = gaps(offsets);
  const Moments m = moments(g);
  // Standard error of the mean is 0.7% here; of the CV about 1%.
  EXPECT_NEAR(m.mean, 1.0 / rate, 0.03 / rate);
  EXPECT_NEAR(m.cv, 1.0, 0.04);
  EXPECT_NEAR(m.skew, 2.0, 0.25);
  // Kolmogorov-Smirnov against the exponential CDF 1 - exp(-rate x); 1% critical value.
  std::sort(g.begin(), g.end());
  const double n = static_cast<double>(g.size());
  double d = 0.0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double cdf = 1.0 - std::exp(-rate * g[i]);
    d = std::max(
        {d, std::abs(cdf - static_cast<double>(i) / n), std::abs(static_cast<double>(i + 1) / n - cdf)});
  }
  EXPECT_LT(d, 1.63 / std::sqrt(n));
}

TEST(Arrivals, CountsPerWindowHavePoissonDispersion) {
  // For a Poisson process the number of arrivals in a unit window has variance = mean.
  const double rate = 40.0;
  const auto offsets = arrival_offsets(40000, rate, 1.0, 7);
  const int windows = static_cast<int>(offsets.back());
  std::vector<double> counts(static_cast<size_t>(windows), 0.0);
  for (double t : offsets)
    if (t < windows) counts[static_cast<size_t>(t)] += 1.0;
  const Moments m = moments(counts);
  const double variance = std::pow(m.cv * m.mean, 2);
  EXPECT_NEAR(m.mean, rate, 0.05 * rate);
  EXPECT_NEAR(variance / m.mean, 1.0, 0.2);
}

TEST(Arrivals, BurstinessSetsTheCoefficientOfVariation) {
  // Gamma(k): CV = 1/sqrt(k), skewness = 2/sqrt(k); the mean stays 1/rate.
  for (double k : {0.25, 0.5, 2.0, 4.0}) {
    SCOPED_TRACE(k);
    const double rate = 10.0;
    const Moments m = moments(gaps(arrival_offsets(40001, rate, k, 3)));
    EXPECT_NEAR(m.mean, 1.0 / rate, 0.04 / rate);
    EXPECT_NEAR(m.cv, 1.0 / std::sqrt(k), 0.06 / std::sqrt(k));
    EXPECT_NEAR(m.skew, 2.0 / std::sqrt(k), 0.5 / std::sqrt(k));
  }
}

TEST(Arrivals, InfiniteRateSendsEverythingAtOnce) {
  const auto offsets = arrival_offsets(5, std::numeric_limits<double>::infinity(), 1.0, 1);
  EXPECT_EQ(offsets, std::vector<double>(5, 0.0));
}

TEST(Arrivals, SeedDeterminesTheSchedule) {
  EXPECT_EQ(arrival_offsets(100, 5.0, 1.0, 9), arrival_offsets(100, 5.0, 1.0, 9));
  EXPECT_NE(arrival_offsets(100, 5.0, 1.0, 9), arrival_offsets(100, 5.0, 1.0, 10));
}

TEST(Arrivals, InvalidArgumentsThrow) {
  EXPECT_THROW(arrival_offsets(10, 0.0, 1.0, 0), Error);
  EXPECT_THROW(arrival_offsets(10, -1.0, 1.0, 0), Error);
  EXPECT_THROW(arrival_offsets(10, std::nan(""), 1.0, 0), Error);
  EXPECT_THROW(arrival_offsets(10, 1.0, 0.0, 0), Error);
  EXPECT_THROW(arrival_offsets(-1, 1.0, 1.0, 0), Error);
}

TEST(Random, UniformIntCoversTheRangeEvenly) {
  Random rng(11);
  std::vector<int> hist(7, 0);
  for (int i = 0; i < 70000; ++i) {
    const int64_t v = rng.uniform_int(3, 9);
    ASSERT_GE(v, 3);
    ASSERT_LE(v, 9);
    ++hist[static_cast<size_t>(v - 3)];
  }
  for (int h : hist) EXPECT_NEAR(h, 10000, 400);  // 4 standard deviations
}

TEST(Random, NormalMoments) {
  Random rng(12);
  std::vector<double> x(50000);
  for (double& v : x) v = rng.normal();
  const double mean = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
  double var = 0;
  for (double v : x) var += (v - mean) * (v - mean);
  var /= static_cast<double>(x.size());
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(var, 1.0, 0.03);
}

}  // namespace
}  // namespace strata::bench
