#include "engine/spec/spec_controller.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace strata {

void SpecAcceptance::record(int32_t n_asked, int32_t n_accepted) {
  if (n_asked <= 0) return;
  constexpr double kDecay = 0.9;  // about the last ten rounds
  accepted = accepted * kDecay + n_accepted;
  rejected = rejected * kDecay + (n_accepted < n_asked ? 1.0 : 0.0);
}

void SpecAcceptance::relax() {
  constexpr double kPull = 0.05;  // a prior-strength pull per step: back near the prior in ~50 steps
  const SpecAcceptance prior;
  accepted += kPull * (prior.accepted - accepted);
  rejected += kPull * (prior.rejected - rejected);
}

void SpecAcceptance::model_proposed(bool any) {
  constexpr int32_t kMaxWait = 64;
  if (any) {
    empty_runs = 0;
    wait = 0;
    return;
  }
  empty_runs = std::min(empty_runs + 1, 6);
  wait = std::min(kMaxWait, int32_t{1} << empty_runs);
}

bool SpecAcceptance::hold() {
  if (wait <= 0) return false;
  --wait;
  return true;
}

double draft_token_seconds(double relative_cost, double measured, double step1) {
  const double prior = relative_cost * step1;
  if (!(measured > 0.0)) return prior;
  if (!(step1 > 0.0)) return measured;
  return std::min(measured, std::max(2.0 * relative_cost, 0.5) * step1);
}

void SpecController::choose(std::vector<SpecCandidate>& c, int64_t base_tokens) const {
  for (SpecCandidate& s : c) s.k = 0;
  if (!cost_ || cost_->empty()) {
    for (SpecCandidate& s : c) s.k = s.max_k;
    return;
  }
  int64_t tokens = base_tokens;
  double expected = static_cast<double>(c.size());  // every decode emits at least one token
  double seconds = cost_->seconds(tokens);
  std::vector<uint8_t> done(c.size(), 0);
  for (;;) {
    // The draft that adds the most expected tokens next.
    int best = -1;
    double best_gain = 0.0;
    for (size_t i = 0; i < c.size(); ++i) {
      if (done[i] || c[i].k >= c[i].max_k) continue;
      const double gain = std::pow(c[i].alpha, c[i].k + 1);
      if (gain > best_gain) best_gain = gain, best = static_cast<int>(i);
    }
    if (best < 0) break;
    SpecCandidate& b = c[static_cast<size_t>(best)];
    // The shortest run of this sequence's next drafts that raises the step's tokens per second:
    // usually the next draft alone (and the drafts are then handed out one at a time among the
    // sequences). But the step cost is measured at a few sizes and interpolated, so one extra
    // token can look dear (2 tokens cost more than 1) where three are nearly free (4 cost what 2
    // do): a run the next draft alone would miss is taken whole.
    const double rate = expected / seconds;
    double run_gain = 0.0, run_extra = 0.0;
    int32_t run = 0;
    for (int32_t j = 1; b.k + j <= b.max_k; ++j) {
      run_gain += std::pow(b.alpha, b.k + j);
      run_extra = cost_->seconds(tokens + j) - cost_->seconds(tokens) + j * b.draft_cost +
                  (b.k == 0 ? b.first_cost : 0.0);
      if ((expected + run_gain) > rate * (seconds + run_extra)) {
        run = j;
        break;
      }
    }
    if (run == 0) {
      done[static_cast<size_t>(best)] = 1;  // no run of further drafts pays for this one
      continue;
    }
    b.k += run;
    tokens += run;
    expected += run_gain;
    seconds += run_extra;
  }
}

bool PricedOutProbe::apply(std::vector<SpecCandidate>& c) {
  SpecCandidate* best = nullptr;
  for (SpecCandidate& s : c) {
    if (s.k > 0) {
      steps_ = 0;
      return false;
    }
    if (s.max_k > 0 && (!best || s.alpha > best->alpha)) best = &s;
  }
  if (!best || ++steps_ < kEvery) return false;
  steps_ = 0;
  best->k = std::min(kLength, best->max_k);
  return true;
}

}  // namespace strata
