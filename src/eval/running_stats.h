// Streaming mean / variance / covariance and order statistics for the quality metrics.
//
// Standard errors follow llama-perplexity: the standard error of a mean of n samples is
// sqrt(var / (n - 1)) with var the population variance E[x^2] - E[x]^2 (computed here with
// Welford's update, which does not cancel catastrophically for values far from zero).
#pragma once

#include <cstdint>
#include <vector>

namespace strata::eval {

class RunningStats {
 public:
  void add(double x);
  int64_t count() const { return n_; }
  double mean() const { return mean_; }
  // Population variance (divides by n); 0 for fewer than 2 samples.
  double variance() const;
  // Standard error of the mean, sqrt(variance / (n - 1)); 0 for fewer than 2 samples.
  double stderr_of_mean() const;

 private:
  int64_t n_ = 0;
  double mean_ = 0.0;
  double m2_ = 0.0;  // sum of squared deviations from the running mean
};

// Paired samples (x, y) for the covariance of two means (ΔPPL error propagation).
class PairedStats {
 public:
  void add(double x, double y);
  int64_t count() const { return x_.count(); }
  const RunningStats& x() const { return x_; }
  const RunningStats& y() const { return y_; }
  // Population covariance (divides by n).
  double covariance() const;
  // Covariance of the two sample means: covariance / (n - 1); 0 for fewer than 2 samples.
  double covariance_of_means() const;

 private:
  RunningStats x_, y_;
  double c_ = 0.0;  // co-moment sum (x - mean_x)(y - mean_y)
};

// The q-quantile (q in [0, 1]) of ascending `sorted` values with linear interpolation between
// the closest ranks (numpy's default): fractional index q * (n - 1). NaN for an empty vector.
double quantile_of_sorted(const std::vector<double>& sorted, double q);

// PPL = exp(mean NLL) and its standard error by first-order propagation: ppl * se(NLL).
struct PerplexityEstimate {
  double ppl = 0.0;
  double ppl_stderr = 0.0;
};
PerplexityEstimate perplexity_from_nll(const RunningStats& nll);

}  // namespace strata::eval
