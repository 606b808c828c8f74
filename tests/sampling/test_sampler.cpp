#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/check.h"
#include "sampling/sampler.h"

namespace strata {
namespace {

std::vector<float> logits_from_probs(const std::vector<double>& p) {
  std::vector<float> l;
  for (double v : p) l.push_back(static_cast<float>(std::log(v)));
  return l;
}

// Empirical frequencies of `n` draws.
std::vector<double> frequencies(SamplingParams sp, const std::vector<float>& logits, int n) {
  sp.seed = 1234;
  Sampler s(sp, static_cast<int32_t>(logits.size()));
  std::vector<double> f(logits.size(), 0.0);
  // Each draw is at the next output position (the sampler's randomness is keyed by position).
  for (int i = 0; i < n; ++i) {
    const int32_t t = s.sample(logits.data());
    f[static_cast<size_t>(t)] += 1.0 / n;
    s.accept(t);
  }
  return f;
}

TEST(Sampler, GreedyPicksArgmaxLowestIdOnTies) {
  SamplingParams sp;
  sp.temperature = 0.0f;
  Sampler s(sp, 4);
  const float l[] = {1.0f, 3.0f, 3.0f, -1.0f};
  EXPECT_EQ(s.sample(l), 1);
}

TEST(Sampler, TemperatureOneMatchesSoftmax) {
  const std::vector<double> p = {0.5, 0.3, 0.15, 0.05};
  const auto f = frequencies(SamplingParams{}, logits_from_probs(p), 200000);
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(f[i], p[i], 0.005) << i;
}

TEST(Sampler, TopKKeepsKMostLikely) {
  SamplingParams sp;
  sp.top_k = 2;
  const auto f = frequencies(sp, logits_from_probs({0.5, 0.3, 0.15, 0.05}), 100000);
  EXPECT_NEAR(f[0], 0.5 / 0.8, 0.01);
  EXPECT_NEAR(f[1], 0.3 / 0.8, 0.01);
  EXPECT_EQ(f[2], 0.0);
  EXPECT_EQ(f[3], 0.0);
}

TEST(Sampler, TopPKeepsSmallestSetReachingP) {
  SamplingParams sp;
  sp.top_p = 0.7f;  // 0.5 < 0.7 <= 0.5 + 0.3: keeps tokens 0 and 1
  const auto f = frequencies(sp, logits_from_probs({0.5, 0.3, 0.15, 0.05}), 100000);
  EXPECT_NEAR(f[0], 0.625, 0.01);
  EXPECT_EQ(f[2], 0.0);
}

TEST(Sampler, MinPDropsTokensBelowFractionOfMax) {
  SamplingParams sp;
  sp.min_p = 0.25f;  // threshold 0.125: keeps 0.5, 0.3, 0.15
  const auto f = frequencies(sp, logits_from_probs({0.5, 0.3, 0.15, 0.05}), 100000);
  EXPECT_NEAR(f[2], 0.15 / 0.95, 0.01);
  EXPECT_EQ(f[3], 0.0);
}

TEST(Sampler, SameSeedSameTokens) {
  SamplingParams sp;
  sp.seed = 7;
  const std::vector<float> l = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f};
  Sampler a(sp, 5), b(sp, 5);
  std::map<int32_t, int> seen;
  for (int i = 0; i < 100; ++i) {
    const int32_t t = a.sample(l.data());
    EXPECT_EQ(t, b.sample(l.data()));
    a.accept(t);
    b.accept(t);
    ++seen[t];
  }
  EXPECT_GT(seen.size(), 1u);  // the draws do vary from position to position
}

TEST(Sampler, PenaltiesFollowOpenAiAndVllmDefinitions) {
  SamplingParams sp;
  sp.temperature = 0.0f;
  sp.presence_penalty = 1.0f;
  sp.frequency_penalty = 0.5f;
  Sampler s(sp, 3);
  const float l[] = {2.0f, 1.9f, 0.0f};
  EXPECT_EQ(s.sample(l), 0);
  s.accept(0);  // token 0: 2.0 - 0.5 - 1.0 = 0.5 < 1.9
  EXPECT_EQ(s.sample(l), 1);

  SamplingParams rp;
  rp.temperature = 0.0f;
  rp.repetition_penalty = 2.0f;
  Sampler r(rp, 3);
  r.set_prompt({0});  // 2.0 / 2 = 1.0 < 1.9
  EXPECT_EQ(r.sample(l), 1);
}

TEST(Sampler, LogitBiasCanForceAToken) {
  SamplingParams sp;
  sp.temperature = 0.0f;
  sp.logit_bias = {{2, 100.0f}};
  Sampler s(sp, 3);
  const float l[] = {2.0f, 1.9f, 0.0f};
  EXPECT_EQ(s.sample(l), 2);
}

TEST(Sampler, InvalidParametersAreRejected) {
  SamplingParams sp;
  sp.top_p = 0.0f;
  EXPECT_THROW(Sampler(sp, 3), Error);
  sp = {};
  sp.temperature = -1.0f;
  EXPECT_THROW(Sampler(sp, 3), Error);
  sp = {};
  sp.logit_bias = {{5, 1.0f}};
  EXPECT_THROW(Sampler(sp, 3), Error);
}

TEST(Logprobs, MatchLogSoftmax) {
  const float l[] = {1.0f, 2.0f, 3.0f};
  const double z = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  const auto top = top_logprobs(l, 3, 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].token, 2);
  EXPECT_NEAR(top[0].logprob, 3.0 - z, 1e-5);
  EXPECT_EQ(top[1].token, 1);
  EXPECT_NEAR(token_logprob(l, 3, 0), 1.0 - z, 1e-5);
}

}  // namespace
}  // namespace strata
