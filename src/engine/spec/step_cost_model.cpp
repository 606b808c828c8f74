#include "engine/spec/step_cost_model.h"

#include <algorithm>
#include <cmath>

namespace strata {

void StepCostModel::set_samples(const std::vector<std::pair<int64_t, double>>& samples) {
  points_.clear();
  for (const auto& [n, s] : samples)
    if (n > 0 && s > 0.0 && std::isfinite(s)) points_.push_back({n, s});
  std::sort(points_.begin(), points_.end(), [](const Point& a, const Point& b) { return a.n < b.n; });
  make_monotone(0);
}

// Time never decreases with more tokens (measurement noise can say otherwise). The anchor, the
// point just observed, is the freshest: the points below it come down to it and the points above
// it go up to it. Raising it to a stale smaller size instead would pin it there (seen: a start-up
// 2-token sample of 94 ms held the 4-token estimate at 94 ms while 4-token steps ran in 66, so at
// 4 streams drafts looked cheap against the base step, and speculation ran at 0.83-0.87x).
void StepCostModel::make_monotone(size_t anchor) {
  for (size_t j = anchor; j-- > 0;) points_[j].seconds = std::min(points_[j].seconds, points_[j + 1].seconds);
  for (size_t i = anchor + 1; i < points_.size(); ++i)
    points_[i].seconds = std::max(points_[i].seconds, points_[i - 1].seconds);
}

void StepCostModel::observe(int64_t n_tokens, double seconds) {
  if (points_.empty() || n_tokens <= 0 || !(seconds > 0.0) || !std::isfinite(seconds)) return;
  // The size class: the sample point nearest in log scale.
  size_t best = 0;
  double best_d = 1e300;
  for (size_t i = 0; i < points_.size(); ++i) {
    const double d = std::fabs(std::log(static_cast<double>(points_[i].n) / static_cast<double>(n_tokens)));
    if (d < best_d) best_d = d, best = i;
  }
  if (best_d > 0.35) {  // a new size class: the batch sizes that really run get their own point
    points_.push_back({n_tokens, seconds});
    std::sort(points_.begin(), points_.end(), [](const Point& a, const Point& b) { return a.n < b.n; });
    const auto at =
        std::find_if(points_.begin(), points_.end(), [&](const Point& p) { return p.n == n_tokens; });
    make_monotone(static_cast<size_t>(at - points_.begin()));
    return;
  }
  // Moved to the class's size along the model's own curve, then averaged in. Whatever else runs
  // on the machine only ever slows a step down, so a step faster than the estimate is stronger
  // evidence than a slower one: the estimate follows it five times as fast.
  const double est = seconds - (this->seconds(n_tokens) - points_[best].seconds);
  const double w = est < points_[best].seconds ? 0.5 : 0.1;
  if (est > 0.0) points_[best].seconds = (1.0 - w) * points_[best].seconds + w * est;
  make_monotone(best);
}

double StepCostModel::seconds(int64_t n_tokens) const {
  if (points_.empty()) return static_cast<double>(n_tokens);
  if (n_tokens <= points_.front().n) return points_.front().seconds;
  for (size_t i = 1; i < points_.size(); ++i) {
    if (n_tokens <= points_[i].n) {
      const Point& a = points_[i - 1];
      const Point& b = points_[i];
      const double f = static_cast<double>(n_tokens - a.n) / static_cast<double>(b.n - a.n);
      return a.seconds + f * (b.seconds - a.seconds);
    }
  }
  // Beyond the largest sample: the slope of the last segment (or proportional with one point).
  const Point& last = points_.back();
  const double slope = points_.size() >= 2 ? (last.seconds - points_[points_.size() - 2].seconds) /
                                                 static_cast<double>(last.n - points_[points_.size() - 2].n)
                                           : last.seconds / static_cast<double>(last.n);
  return last.seconds + slope * static_cast<double>(n_tokens - last.n);
}

}  // namespace strata
