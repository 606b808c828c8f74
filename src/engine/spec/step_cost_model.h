// Step time of a model as a function of the tokens in the batch, measured at start-up and kept
// up to date with the steps that actually ran: what a speculative token costs at the current
// load. A memory-bound decode step costs about the same for 1 or 8 tokens; a compute-bound
// step's cost grows with every token, and speculation stops paying.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata {

class StepCostModel {
 public:
  // Seconds for batches of n tokens, n = 1, 2, 4, ... (one sample per power of two).
  void set_samples(const std::vector<std::pair<int64_t, double>>& samples);
  // Folds an observed step (n tokens in `seconds`) into the estimate of its size class (a new
  // class when no sample is within a factor 1.4 of n); a step faster than the estimate weighs
  // more than a slower one (load only ever slows steps down).
  void observe(int64_t n_tokens, double seconds);
  // Estimated seconds of a step of n tokens (piecewise linear between the size classes;
  // linear extrapolation beyond the largest).
  double seconds(int64_t n_tokens) const;
  bool empty() const { return points_.empty(); }

 private:
  struct Point {
    int64_t n;
    double seconds;
  };
  void make_monotone(size_t anchor);  // anchor: the point to keep
  std::vector<Point> points_;         // increasing n, non-decreasing seconds
};

}  // namespace strata
