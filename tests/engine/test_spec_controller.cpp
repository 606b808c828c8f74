// Adaptive draft lengths: drafts are handed out while the step's expected output tokens per
// second improve under the step-cost model, and not at all when each extra token costs its full
// share (a compute-bound step) or when drafts are rarely accepted.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/spec/skip_layer_drafter.h"
#include "engine/spec/spec_controller.h"

namespace strata {
namespace {

StepCostModel model(std::vector<std::pair<int64_t, double>> s) {
  StepCostModel m;
  m.set_samples(s);
  return m;
}

TEST(StepCostModel, InterpolatesAndExtrapolatesLinearly) {
  const StepCostModel m = model({{1, 1.0}, {4, 1.3}, {16, 4.0}});
  EXPECT_DOUBLE_EQ(m.seconds(1), 1.0);
  EXPECT_DOUBLE_EQ(m.seconds(2), 1.1);
  EXPECT_DOUBLE_EQ(m.seconds(10), 1.3 + 6.0 * 2.7 / 12.0);
  EXPECT_DOUBLE_EQ(m.seconds(20), 4.0 + 4.0 * 2.7 / 12.0);
}

TEST(SpecController, MemoryBoundStepTakesLongDraftsFromAcceptingSequences) {
  // One sequence, a step costs almost the same for 1..17 tokens.
  const StepCostModel m = model({{1, 1.0}, {2, 1.01}, {4, 1.02}, {8, 1.04}, {16, 1.08}, {32, 1.5}});
  SpecController c(&m);
  std::vector<SpecCandidate> s = {{0.9, 0.0, 16, 0}};
  c.choose(s, 1);
  EXPECT_GE(s[0].k, 8);
  s = {{0.005, 0.0, 16, 0}};  // drafts almost never accepted: none are worth a step's extra cost
  c.choose(s, 1);
  EXPECT_EQ(s[0].k, 0);
}

TEST(SpecController, ComputeBoundStepDraftsNothing) {
  // 64 decodes: every extra token costs 1/64 of the step, as much as a whole decode token.
  const StepCostModel m = model({{1, 0.1}, {64, 6.4}, {128, 12.8}});
  SpecController c(&m);
  std::vector<SpecCandidate> s(64, SpecCandidate{0.7, 0.0, 16, 0});
  c.choose(s, 64);
  for (const SpecCandidate& x : s) EXPECT_EQ(x.k, 0);
}

TEST(SpecController, DraftCostReducesTheLength) {
  const StepCostModel m = model({{1, 1.0}, {32, 1.0}});
  SpecController c(&m);
  std::vector<SpecCandidate> cheap = {{0.8, 0.0, 16, 0}}, costly = {{0.8, 0.5, 16, 0}};
  c.choose(cheap, 1);
  c.choose(costly, 1);
  EXPECT_GT(cheap[0].k, costly[0].k);
  EXPECT_EQ(cheap[0].k, 16);
}

TEST(DraftRoundSeconds, MeasuredCostBoundedByTwiceTheByteRatioOrHalfATargetStep) {
  // Before any measurement: the weight-byte ratio of a 0.1 s target step.
  EXPECT_DOUBLE_EQ(draft_round_seconds(0.28, 0.0, 0.1), 0.028);
  // Measured and plausible (0.37 of a target step): taken as it is.
  EXPECT_DOUBLE_EQ(draft_round_seconds(0.28, 0.037, 0.1), 0.037);
  // A measurement inflated by a busy machine: bounded at 0.56 of a target step for a 0.28 draft ...
  EXPECT_DOUBLE_EQ(draft_round_seconds(0.28, 0.2, 0.1), 0.056);
  // ... and at half a step for a small one (its fixed per-forward costs are real).
  EXPECT_DOUBLE_EQ(draft_round_seconds(0.05, 0.2, 0.1), 0.05);
  EXPECT_DOUBLE_EQ(draft_round_seconds(0.05, 0.03, 0.1), 0.03);
  // No step cost known yet: the measurement alone.
  EXPECT_DOUBLE_EQ(draft_round_seconds(0.28, 0.2, 0.0), 0.2);
}

TEST(SpecController, AnInflatedDraftMeasurementStillLetsAnAcceptingSequenceDraft) {
  // A memory-bound target step (a 0.1 s decode, 4 tokens at 0.102 s), a sequence at the prior
  // acceptance 0.6, a self-draft of 0.28 of the bytes whose rounds measured 0.3 s (three
  // decodes: the machine was busy). Unbounded it would never draft again.
  const StepCostModel m = model({{1, 0.1}, {4, 0.102}, {16, 0.3}});
  SpecController c(&m);
  std::vector<SpecCandidate> s = {{0.6, 0.0, 16, 0}};
  s[0].drafter = 0;
  c.choose(s, 1, {[](int64_t) { return 0.3; }});
  EXPECT_EQ(s[0].k, 0);
  c.choose(s, 1, {[&](int64_t n) { return draft_round_seconds(0.28, 0.3, m.seconds(n)); }});
  EXPECT_GE(s[0].k, 1);
}

TEST(SpecController, ADraftRoundIsSharedByTheSequencesDraftingInIt) {
  // Four decodes on a memory-bound target (a step costs 1 s for any size here); a model
  // drafter's round costs 0.5 s for one to four sequences.
  const StepCostModel m = model({{1, 1.0}, {64, 1.0}});
  const std::vector<DraftRoundSeconds> rounds = {[](int64_t) { return 0.5; }};
  auto candidates = [](std::vector<double> alphas) {
    std::vector<SpecCandidate> c;
    for (double a : alphas) c.push_back({a, 0.0, 8, 0, 0.0, 0});
    return c;
  };
  // At acceptance 0.6 no draft pays alone (4.6 tokens in 1.5 s < 4 in 1 s), but four in one
  // round do (6.4 tokens in 1.5 s): every sequence drafts, and all to the same depth.
  std::vector<SpecCandidate> s = candidates({0.6, 0.6, 0.6, 0.6});
  SpecController(&m).choose(s, 4, rounds);
  for (const SpecCandidate& x : s) {
    EXPECT_GE(x.k, 1);
    EXPECT_EQ(x.k, s[0].k);
  }
  // Priced per token at a whole round each, as if drafting were not batched: nothing pays.
  std::vector<SpecCandidate> per_token = candidates({0.6, 0.6, 0.6, 0.6});
  for (SpecCandidate& x : per_token) x.drafter = -1, x.draft_cost = 0.5;
  SpecController(&m).choose(per_token, 4, {});
  for (const SpecCandidate& x : per_token) EXPECT_EQ(x.k, 0);
  // One likely sequence among unlikely ones pays the whole round alone, which its 0.9 does not
  // repay (4.9 tokens in 1.3 s with a 0.3 s round); the same round priced per token of a round
  // of four (0.075 s) would have drafted for it.
  const std::vector<DraftRoundSeconds> cheap = {[](int64_t) { return 0.3; }};
  std::vector<SpecCandidate> lone = candidates({0.9, 0.05, 0.05, 0.05});
  SpecController(&m).choose(lone, 4, cheap);
  for (const SpecCandidate& x : lone) EXPECT_EQ(x.k, 0);
  std::vector<SpecCandidate> averaged = candidates({0.9, 0.05, 0.05, 0.05});
  for (SpecCandidate& x : averaged) x.drafter = -1, x.draft_cost = 0.3 / 4;
  SpecController(&m).choose(averaged, 4, {});
  EXPECT_GE(averaged[0].k, 1);
}

TEST(SpecController, TakesARunOfDraftsThatPaysWhereItsFirstDraftAloneDoesNot) {
  // Step costs measured at 1, 2 and 4 tokens: the second token looks dear, the third and fourth
  // are free. At acceptance 0.6, one draft gives 1.6 tokens for 1.7 s (worse than 1 token a
  // second); three give 1 + 0.6 + 0.36 + 0.216 = 2.176 tokens for 1.7 s.
  const StepCostModel m = model({{1, 1.0}, {2, 1.7}, {4, 1.7}, {8, 3.4}});
  SpecController c(&m);
  std::vector<SpecCandidate> s = {{0.6, 0.0, 16, 0}};
  c.choose(s, 1);
  EXPECT_EQ(s[0].k, 3);
  // Expected tokens per second of every length, computed here: 3 is the best one.
  auto rate = [&](int k) {
    double e = 0.0;
    for (int i = 0; i <= k; ++i) e += std::pow(0.6, i);
    return e / m.seconds(1 + k);
  };
  for (int k = 0; k <= 16; ++k) EXPECT_LE(rate(k), rate(3) + 1e-12) << k;
  // A compute-bound step (every token costs its full share): no run pays, as before.
  const StepCostModel linear = model({{1, 1.0}, {16, 16.0}});
  s = {{0.9, 0.0, 16, 0}};
  SpecController(&linear).choose(s, 1);
  EXPECT_EQ(s[0].k, 0);
}

TEST(StepCostModel, AFasterStepMovesTheEstimateMoreThanASlowerOne) {
  StepCostModel up = model({{1, 1.0}, {4, 2.0}});
  StepCostModel down = up;
  up.observe(4, 3.0);    // 1.0 slower than the estimate
  down.observe(4, 1.0);  // 1.0 faster
  EXPECT_NEAR(up.seconds(4), 2.1, 1e-12);
  EXPECT_NEAR(down.seconds(4), 1.5, 1e-12);
  // Twice more at the machine's real 4-token cost: within 0.15 of it.
  down.observe(4, 1.0);
  down.observe(4, 1.0);
  EXPECT_LT(down.seconds(4), 1.15);
}

TEST(StepCostModel, AStaleSmallerSizeDoesNotPinAnObservedLargerOne) {
  // A start-up 2-token sample came out slow; only 4-token steps run afterwards.
  StepCostModel m = model({{1, 1.0}, {2, 3.0}, {4, 3.0}, {8, 4.0}});
  for (int i = 0; i < 40; ++i) m.observe(4, 2.0);
  EXPECT_NEAR(m.seconds(4), 2.0, 0.01);
  EXPECT_LE(m.seconds(2), m.seconds(4));  // still monotone: the stale point came down
  EXPECT_GE(m.seconds(2), m.seconds(1));
  EXPECT_NEAR(m.seconds(8), 4.0, 1e-12);  // the larger sizes keep their own estimates
}

TEST(PricedOutProbe, DraftsAShortRunOnceInKEveryStepsThatDraftNothing) {
  PricedOutProbe probe;
  int probes = 0;
  for (int step = 1; step <= 4 * PricedOutProbe::kEvery; ++step) {
    std::vector<SpecCandidate> c = {{0.3, 0.0, 16, 0}, {0.7, 0.0, 16, 0}, {0.9, 0.0, 0, 0}};
    if (probe.apply(c, 1)) {
      ++probes;
      EXPECT_EQ(step % PricedOutProbe::kEvery, 0) << step;
      EXPECT_EQ(c[0].k, 0);
      EXPECT_EQ(c[1].k, PricedOutProbe::kLength);  // the most accepting one that may draft
      EXPECT_EQ(c[2].k, 0);                        // may not draft (max_k 0)
    } else {
      for (const SpecCandidate& x : c) EXPECT_EQ(x.k, 0);
    }
  }
  EXPECT_EQ(probes, 4);
  // A step in which something drafts starts the count over; a short cap shortens the probe.
  for (int step = 1; step < PricedOutProbe::kEvery; ++step) {
    std::vector<SpecCandidate> c = {{0.5, 0.0, 2, 0}};
    EXPECT_FALSE(probe.apply(c, 1));
  }
  std::vector<SpecCandidate> drafting = {{0.5, 0.0, 2, 1}};
  EXPECT_FALSE(probe.apply(drafting, 1));
  EXPECT_EQ(drafting[0].k, 1);
  int32_t until = 0;
  for (;;) {
    std::vector<SpecCandidate> c = {{0.5, 0.0, 2, 0}};
    ++until;
    if (probe.apply(c, 1)) {
      EXPECT_EQ(c[0].k, 2);
      break;
    }
  }
  EXPECT_EQ(until, PricedOutProbe::kEvery);
}

TEST(PricedOutProbe, LargeStepsNeitherProbeNorCount) {
  PricedOutProbe probe;
  for (int step = 1; step <= 4 * PricedOutProbe::kEvery; ++step) {
    std::vector<SpecCandidate> c = {{0.9, 0.0, 16, 0}};
    EXPECT_FALSE(probe.apply(c, PricedOutProbe::kMaxBase + 1)) << step;
    EXPECT_EQ(c[0].k, 0);
  }
  // The large steps did not count towards the next probe of a small step.
  int32_t until = 0;
  for (;;) {
    std::vector<SpecCandidate> c = {{0.9, 0.0, 16, 0}};
    ++until;
    if (probe.apply(c, PricedOutProbe::kMaxBase)) break;
  }
  EXPECT_EQ(until, PricedOutProbe::kEvery);
}

TEST(SpecAcceptance, TracksTheRecentAcceptanceRate) {
  SpecAcceptance a;
  for (int i = 0; i < 50; ++i) a.record(4, 4);
  EXPECT_GT(a.alpha(), 0.95);
  for (int i = 0; i < 50; ++i) a.record(4, 0);
  EXPECT_LT(a.alpha(), 0.05);
}

TEST(SpecAcceptance, ADrafterThatProposesNothingStopsBeingAskedUntilTheEvidenceFades) {
  // Asked for 4 drafts and given none (p_min cut the model's proposal): a rejection each round.
  SpecAcceptance a;
  for (int i = 0; i < 30; ++i) a.record(4, 0);
  EXPECT_LT(a.alpha(), 0.1);
  // A short proposal fully accepted still ends the round early: alpha = 1 / (1 + 1) per round.
  SpecAcceptance cut;
  for (int i = 0; i < 100; ++i) cut.record(4, 1);
  EXPECT_NEAR(cut.alpha(), 0.5, 1e-6);
  // Steps without drafting pull the estimate back toward the prior (0.6), so drafting is tried again.
  const double prior = SpecAcceptance().alpha();
  for (int i = 0; i < 100; ++i) a.relax();
  EXPECT_NEAR(a.alpha(), prior, 0.02);
  // The controller drafts for the relaxed sequence again on a memory-bound step.
  const StepCostModel cost = model({{1, 0.010}, {16, 0.011}});
  std::vector<SpecCandidate> c = {{a.alpha(), 0.0, 8, 0}};
  SpecController(&cost).choose(c, 1);
  EXPECT_GT(c[0].k, 0);
}

TEST(SpecAcceptance, AModelDrafterThatProposesNothingRestsExponentiallyLonger) {
  SpecAcceptance a;
  EXPECT_FALSE(a.hold());
  // Steps held after each consecutive empty run: 2, 4, 8, 16, 32, 64, then 64 again.
  for (int32_t expected : {2, 4, 8, 16, 32, 64, 64}) {
    a.model_proposed(false);
    int32_t held = 0;
    while (a.hold()) ++held;
    EXPECT_EQ(held, expected);
  }
  // A proposal ends the rest at once and starts the doubling over.
  a.model_proposed(false);
  EXPECT_TRUE(a.hold());
  a.model_proposed(true);
  EXPECT_FALSE(a.hold());
  a.model_proposed(false);
  int32_t held = 0;
  while (a.hold()) ++held;
  EXPECT_EQ(held, 2);
}

TEST(ExpectedSpeedup, MatchesTheGeometricSeries) {
  // alpha 0.5, free drafts: E[tokens](k) = 2 - 0.5^k, increasing in k.
  EXPECT_NEAR(expected_speedup(0.5, 0.0, 3), 2.0 - 0.125, 1e-12);
  // Drafting as costly as the target never pays.
  EXPECT_DOUBLE_EQ(expected_speedup(0.5, 1.0, 8), 1.0);
}

}  // namespace
}  // namespace strata
