#include "engine/spec/spec_controller.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/check.h"

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

double draft_round_seconds(double relative_cost, double measured, double step_n) {
  const double prior = relative_cost * step_n;
  if (!(measured > 0.0)) return prior;
  if (!(step_n > 0.0)) return measured;
  return std::min(measured, std::max(2.0 * relative_cost, 0.5) * step_n);
}

namespace {

// Sequences drafting in each round, per model drafter: what one more draft of a sequence costs.
class RoundDepths {
 public:
  explicit RoundDepths(const std::vector<DraftRoundSeconds>& rounds)
      : rounds_(rounds), depth_(rounds.size()) {}
  // Seconds of drafting rounds k+1 .. k+j of a sequence of `drafter` on top of what is chosen.
  double extra(int32_t drafter, int32_t k, int32_t j) const {
    if (drafter < 0) return 0.0;
    const auto& d = depth_[static_cast<size_t>(drafter)];
    const DraftRoundSeconds& r = rounds_[static_cast<size_t>(drafter)];
    double s = 0.0;
    for (int32_t i = k; i < k + j; ++i) {
      const int32_t m = i < static_cast<int32_t>(d.size()) ? d[static_cast<size_t>(i)] : 0;
      s += r(m + 1) - (m > 0 ? r(m) : 0.0);
    }
    return s;
  }
  void take(int32_t drafter, int32_t k, int32_t j) {
    if (drafter < 0) return;
    auto& d = depth_[static_cast<size_t>(drafter)];
    if (static_cast<int32_t>(d.size()) < k + j) d.resize(static_cast<size_t>(k + j), 0);
    for (int32_t i = k; i < k + j; ++i) ++d[static_cast<size_t>(i)];
  }

 private:
  const std::vector<DraftRoundSeconds>& rounds_;
  std::vector<std::vector<int32_t>> depth_;  // [drafter][round]: sequences drafting in it
};

// The choice under construction: the step's tokens, expected output tokens and seconds.
struct Plan {
  const StepCostModel& cost;
  std::vector<SpecCandidate>& c;
  RoundDepths depths;
  int64_t tokens;
  double expected;
  double seconds;

  bool pays(double gain, double extra) const {
    return (expected + gain) * seconds > expected * (seconds + extra);
  }
  double next_gain(size_t i) const { return std::pow(c[i].alpha, c[i].k + 1); }
  // Seconds of drafts k+1 .. k+j of s on top of the plan, the target step's growth not included.
  double draft_extra(const SpecCandidate& s, const RoundDepths& d, int32_t j) const {
    return d.extra(s.drafter, s.k, j) + j * s.draft_cost + (s.k == 0 ? s.first_cost : 0.0);
  }
  void take(SpecCandidate& s, int32_t j, double gain, double extra) {
    depths.take(s.drafter, s.k, j);
    s.k += j;
    tokens += j;
    expected += gain;
    seconds += extra;
  }

  // One more draft for each of the q most likely sequences, for the smallest q that pays: a
  // model drafter's round costs about as much for several sequences as for one, so a draft
  // that does not pay alone can pay together with the others of its round.
  bool breadth_move(const std::vector<size_t>& order) {
    double gain = 0.0, extra = 0.0;
    RoundDepths trial = depths;
    for (size_t q = 0; q < order.size(); ++q) {
      const SpecCandidate& s = c[order[q]];
      gain += next_gain(order[q]);
      extra += draft_extra(s, trial, 1);
      trial.take(s.drafter, s.k, 1);
      const double step = cost.seconds(tokens + static_cast<int64_t>(q) + 1) - cost.seconds(tokens);
      if (!pays(gain, step + extra)) continue;
      for (size_t i = 0; i <= q; ++i) {
        SpecCandidate& t = c[order[i]];
        const double g = next_gain(order[i]);
        take(t, 1, g, cost.seconds(tokens + 1) - cost.seconds(tokens) + draft_extra(t, depths, 1));
      }
      return true;
    }
    return false;
  }

  // A longer run of one sequence: the step cost is measured at a few sizes and interpolated, so
  // one extra token can look dear (2 tokens cost more than 1) where three are nearly free (4
  // cost what 2 do); the first sequence (most likely first) with a run that pays takes its
  // shortest such run whole.
  bool run_move(const std::vector<size_t>& order) {
    for (size_t i : order) {
      SpecCandidate& b = c[i];
      double gain = 0.0;
      for (int32_t j = 1; b.k + j <= b.max_k; ++j) {
        gain += std::pow(b.alpha, b.k + j);
        const double extra = cost.seconds(tokens + j) - cost.seconds(tokens) + draft_extra(b, depths, j);
        if (pays(gain, extra)) {
          take(b, j, gain, extra);
          return true;
        }
      }
    }
    return false;
  }
};

}  // namespace

void SpecController::choose(std::vector<SpecCandidate>& c, int64_t base_tokens,
                            const std::vector<DraftRoundSeconds>& rounds) const {
  for (SpecCandidate& s : c) s.k = 0;
  if (!cost_ || cost_->empty()) {
    for (SpecCandidate& s : c) s.k = s.max_k;
    return;
  }
  for (const SpecCandidate& s : c) STRATA_CHECK(s.drafter < static_cast<int32_t>(rounds.size()));
  // Every decode emits at least one token.
  Plan plan{*cost_,
            c,
            RoundDepths(rounds),
            base_tokens,
            static_cast<double>(c.size()),
            cost_->seconds(base_tokens)};
  std::vector<size_t> order;  // the sequences that may draft one more, the most likely first
  for (;;) {
    order.clear();
    for (size_t i = 0; i < c.size(); ++i)
      if (c[i].k < c[i].max_k) order.push_back(i);
    if (order.empty()) break;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return plan.next_gain(x) > plan.next_gain(y); });
    if (!plan.breadth_move(order) && !plan.run_move(order)) break;  // nothing more pays
  }
}

bool PricedOutProbe::apply(std::vector<SpecCandidate>& c, int64_t base_tokens) {
  if (base_tokens > kMaxBase) return false;
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
