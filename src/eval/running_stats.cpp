#include "eval/running_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"

namespace strata::eval {

void RunningStats::add(double x) {
  ++n_;
  const double delta = x - mean_;
  mean_ += delta / static_cast<double>(n_);
  m2_ += delta * (x - mean_);
}

double RunningStats::variance() const {
  return n_ < 2 ? 0.0 : std::max(0.0, m2_ / static_cast<double>(n_));
}

double RunningStats::stderr_of_mean() const {
  return n_ < 2 ? 0.0 : std::sqrt(variance() / static_cast<double>(n_ - 1));
}

void PairedStats::add(double x, double y) {
  // The co-moment update uses x's deviation from the old mean and y's from the new one.
  const double dx = x - x_.mean();
  x_.add(x);
  y_.add(y);
  c_ += dx * (y - y_.mean());
}

double PairedStats::covariance() const {
  return count() < 2 ? 0.0 : c_ / static_cast<double>(count());
}

double PairedStats::covariance_of_means() const {
  return count() < 2 ? 0.0 : covariance() / static_cast<double>(count() - 1);
}

double quantile_of_sorted(const std::vector<double>& values, double q) {
  STRATA_CHECK(q >= 0.0 && q <= 1.0);
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double pos = q * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

PerplexityEstimate perplexity_from_nll(const RunningStats& nll) {
  PerplexityEstimate e;
  e.ppl = std::exp(nll.mean());
  e.ppl_stderr = e.ppl * nll.stderr_of_mean();
  return e;
}

}  // namespace strata::eval
