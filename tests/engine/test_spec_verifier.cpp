// Lossless verification, statistically: whatever the draft distribution q, the tokens the
// verifier emits are distributed exactly as the target's final distribution p (after
// temperature, top-k, top-p and penalties). 10^6 draws per case with a fixed seed; Pearson's
// chi-square against p itself, the exact reference.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/spec/verifier.h"
#include "sampling/sampler.h"

namespace strata {
namespace {

// Upper quantile of chi-square with `df` degrees of freedom at a tail probability of about 1e-6
// (Wilson-Hilferty; z = 4.75): a correct verifier fails with probability ~1e-6, a wrong one
// (e.g. q's distribution instead of p's) exceeds it by orders of magnitude.
double chi2_limit(int df) {
  const double z = 4.75, k = df;
  return k * std::pow(1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k)), 3.0);
}

struct Case {
  const char* name;
  SamplingParams target;  // p's transforms
  float q_temperature;    // the draft's (differs from p on purpose)
  bool sampled;           // draft drawn from q (else: q's argmax, a deterministic draft)
};

std::vector<float> random_logits(std::mt19937& rng, int n, float scale) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> l(static_cast<size_t>(n));
  for (float& v : l) v = d(rng);
  return l;
}

class Verifier : public ::testing::TestWithParam<Case> {};

TEST_P(Verifier, EmittedTokensFollowTheTargetDistribution) {
  const Case c = GetParam();
  constexpr int kVocab = 40;
  constexpr int kDraws = 1000000;
  std::mt19937 rng(2024);
  const std::vector<float> target_logits = random_logits(rng, kVocab, 1.5f);
  const std::vector<float> draft_logits = random_logits(rng, kVocab, 1.5f);
  SamplingParams tp = c.target;
  tp.seed = 1;
  Sampler target(tp, kVocab);
  target.set_prompt({3, 5, 7});
  target.accept(3);  // penalty history
  target.accept(11);
  TokenDistribution p, q;
  target.distribution(target_logits.data(), nullptr, p);
  SamplingParams qp;
  qp.temperature = c.q_temperature;
  qp.seed = 2;
  Sampler draft(qp, kVocab);
  draft.distribution(draft_logits.data(), nullptr, q);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> counts(kVocab, 0.0);
  std::vector<float> scratch;
  int64_t accepted = 0;
  for (int i = 0; i < kDraws; ++i) {
    const int32_t d = c.sampled ? q.draw(u(rng)) : q.tokens[0];
    const double u_draw = u(rng), u_accept = u(rng);
    const Verdict v = verify_draft(p, d, c.sampled ? &q : nullptr, u_draw, u_accept, scratch);
    EXPECT_EQ(v.accepted, v.token == d);
    if (!c.sampled) {  // deterministic drafts: the non-speculative draw
      ASSERT_EQ(v.token, p.draw(u_draw));
    }
    counts[static_cast<size_t>(v.token)] += 1.0;
    accepted += v.accepted;
  }
  double chi2 = 0.0;
  int df = -1;
  for (int t = 0; t < kVocab; ++t) {
    const double expected = p.prob_of(t) * kDraws;
    if (expected == 0.0) {
      EXPECT_EQ(counts[static_cast<size_t>(t)], 0.0) << "token " << t << " is outside p's support";
      continue;
    }
    chi2 +=
        (counts[static_cast<size_t>(t)] - expected) * (counts[static_cast<size_t>(t)] - expected) / expected;
    ++df;
  }
  ASSERT_GT(df, 0);
  std::printf("%s: chi2 %.1f with %d df (limit %.1f), acceptance %.3f\n", c.name, chi2, df, chi2_limit(df),
              static_cast<double>(accepted) / kDraws);
  EXPECT_LT(chi2, chi2_limit(df));
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, kDraws);  // the cases are built so that both branches are exercised
}

SamplingParams params(float temperature, int32_t top_k, float top_p, float min_p, float rep, float freq,
                      float pres) {
  SamplingParams s;
  s.temperature = temperature;
  s.top_k = top_k;
  s.top_p = top_p;
  s.min_p = min_p;
  s.repetition_penalty = rep;
  s.frequency_penalty = freq;
  s.presence_penalty = pres;
  return s;
}

INSTANTIATE_TEST_SUITE_P(
    Lossless, Verifier,
    ::testing::Values(
        Case{"plain, sampled q", params(1.0f, 0, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f), 0.7f, true},
        Case{"top-k 8, sampled q", params(0.8f, 8, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f), 1.3f, true},
        Case{"top-p 0.8 + penalties, sampled q", params(1.2f, 0, 0.8f, 0.0f, 1.3f, 0.4f, 0.3f), 1.0f, true},
        Case{"min-p + top-k, sampled q", params(0.9f, 20, 0.95f, 0.05f, 1.1f, 0.0f, 0.0f), 1.5f, true},
        Case{"plain, deterministic draft", params(1.0f, 0, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f), 0.7f, false},
        Case{"top-p + penalties, deterministic draft", params(0.7f, 12, 0.9f, 0.0f, 1.2f, 0.5f, 0.2f), 1.0f,
             false}),
    [](const auto& info) {
      std::string n = info.param.name;
      for (char& ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return n;
    });

TEST(Verifier, GreedyAcceptsExactlyTheArgmax) {
  TokenDistribution p;
  p.tokens = {4};
  p.probs = {1.0f};
  std::vector<float> scratch;
  EXPECT_TRUE(verify_draft(p, 4, nullptr, 0.3, 0.9, scratch).accepted);
  const Verdict v = verify_draft(p, 5, nullptr, 0.3, 0.9, scratch);
  EXPECT_FALSE(v.accepted);
  EXPECT_EQ(v.token, 4);
}

}  // namespace
}  // namespace strata
