// Window planning, statistics and log-softmax of the eval layer against hand-derived values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "core/check.h"
#include "eval/eval_windows.h"
#include "eval/log_softmax.h"
#include "eval/progress_meter.h"
#include "eval/running_stats.h"

namespace strata::eval {
namespace {

TEST(EvalWindows, NonOverlappingScoresSecondHalfLikeLlamaPerplexity) {
  // 100 tokens, ctx 16: floor(100 / 16) = 6 windows at 0, 16, ..., 80; rows 8..14 scored
  // (llama-perplexity: first = n_ctx / 2, n_ctx - 1 - first predictions).
  const WindowPlan plan = plan_windows(100, {16, 0, 0});
  EXPECT_EQ(plan.n_ctx, 16);
  EXPECT_EQ(plan.stride, 16);
  ASSERT_EQ(plan.windows.size(), 6u);
  for (size_t w = 0; w < plan.windows.size(); ++w) {
    EXPECT_EQ(plan.windows[w].start, static_cast<int64_t>(16 * w));
    EXPECT_EQ(plan.windows[w].score_begin, 8);
    EXPECT_EQ(plan.windows[w].n_score, 7);
  }
  EXPECT_EQ(plan.n_scored(), 42);
  // Odd context: first = 7, rows 7..13 (15 - 1 - 7 = 7 predictions).
  const WindowPlan odd = plan_windows(45, {15, 0, 0});
  ASSERT_EQ(odd.windows.size(), 3u);
  EXPECT_EQ(odd.windows[0].score_begin, 7);
  EXPECT_EQ(odd.windows[0].n_score, 7);
}

TEST(EvalWindows, SmallStrideScoresEveryLaterTokenExactlyOnce) {
  // ctx 16, stride 4: (100 - 16) / 4 + 1 = 22 windows, each scoring its last 4 predictions,
  // i.e. text tokens start + 12 .. start + 15.
  const WindowPlan plan = plan_windows(100, {16, 4, 0});
  ASSERT_EQ(plan.windows.size(), 22u);
  std::set<int64_t> predicted;
  for (const EvalWindow& w : plan.windows) {
    EXPECT_EQ(w.n_score, 4);
    EXPECT_EQ(w.score_begin, 11);
    for (int64_t j = w.score_begin; j < w.score_begin + w.n_score; ++j)
      EXPECT_TRUE(predicted.insert(w.start + j + 1).second) << "token scored twice";
  }
  // Tokens 12 .. 99 each scored once: all of them after the first window's unscored prefix.
  EXPECT_EQ(predicted.size(), 88u);
  EXPECT_EQ(*predicted.begin(), 12);
  EXPECT_EQ(*predicted.rbegin(), 99);
}

TEST(EvalWindows, StrideBetweenHalfAndCtxKeepsTheSecondHalf) {
  const WindowPlan plan = plan_windows(40, {16, 10, 0});
  ASSERT_EQ(plan.windows.size(), 3u);  // starts 0, 10, 20
  EXPECT_EQ(plan.windows[2].start, 20);
  EXPECT_EQ(plan.windows[0].n_score, 7);
}

TEST(EvalWindows, MaxWindowsAndErrors) {
  EXPECT_EQ(plan_windows(100, {16, 0, 2}).windows.size(), 2u);
  EXPECT_EQ(plan_windows(100, {16, 0, 50}).windows.size(), 6u);
  EXPECT_EQ(plan_windows(16, {16, 0, 0}).windows.size(), 1u);
  EXPECT_THROW(plan_windows(15, {16, 0, 0}), Error);
  EXPECT_THROW(plan_windows(100, {3, 0, 0}), Error);
  EXPECT_THROW(plan_windows(100, {16, -1, 0}), Error);
  EXPECT_THROW(plan_windows(100, {16, 0, -1}), Error);
}

TEST(EvalWindows, FirstTokenBecomesBos) {
  const std::vector<int32_t> text = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
  const WindowPlan plan = plan_windows(10, {4, 3, 0});
  ASSERT_EQ(plan.windows.size(), 3u);
  EXPECT_EQ(window_tokens(text, plan, plan.windows[1], 1), (std::vector<int32_t>{1, 9, 10, 11}));
  EXPECT_EQ(window_tokens(text, plan, plan.windows[2], -1), (std::vector<int32_t>{11, 12, 13, 14}));
}

TEST(RunningStats, MeanVarianceAndStandardError) {
  RunningStats s;
  for (double x : {1.0, 2.0, 3.0, 4.0}) s.add(x);
  EXPECT_DOUBLE_EQ(s.mean(), 2.5);
  EXPECT_DOUBLE_EQ(s.variance(), 1.25);  // (2.25 + 0.25 + 0.25 + 2.25) / 4
  EXPECT_DOUBLE_EQ(s.stderr_of_mean(), std::sqrt(1.25 / 3.0));
  // Large offset: Welford keeps full precision where E[x^2] - E[x]^2 would cancel.
  RunningStats big;
  for (double x : {1e9 + 1.0, 1e9 + 2.0, 1e9 + 3.0, 1e9 + 4.0}) big.add(x);
  EXPECT_NEAR(big.variance(), 1.25, 1e-6);
  RunningStats one;
  one.add(7.0);
  EXPECT_EQ(one.stderr_of_mean(), 0.0);
}

TEST(RunningStats, PairedCovariance) {
  PairedStats p;
  // y = 2x + 1: cov = 2 var(x); var(x) of {0, 1, 2} = 2/3.
  for (double x : {0.0, 1.0, 2.0}) p.add(x, 2.0 * x + 1.0);
  EXPECT_NEAR(p.covariance(), 4.0 / 3.0, 1e-12);
  EXPECT_NEAR(p.covariance_of_means(), 2.0 / 3.0, 1e-12);
}

TEST(RunningStats, QuantilesInterpolateLikeNumpy) {
  // numpy.percentile([1, 2, 3, 4], [0, 50, 90, 99, 100]) = 1, 2.5, 3.7, 3.97, 4
  const std::vector<double> v = {1.0, 2.0, 3.0, 4.0};
  EXPECT_DOUBLE_EQ(quantile_of_sorted(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantile_of_sorted(v, 0.5), 2.5);
  EXPECT_NEAR(quantile_of_sorted(v, 0.9), 3.7, 1e-12);
  EXPECT_NEAR(quantile_of_sorted(v, 0.99), 3.97, 1e-12);
  EXPECT_DOUBLE_EQ(quantile_of_sorted(v, 1.0), 4.0);
  EXPECT_DOUBLE_EQ(quantile_of_sorted({5.0}, 0.99), 5.0);
  EXPECT_TRUE(std::isnan(quantile_of_sorted({}, 0.5)));
}

TEST(RunningStats, PerplexityFromNll) {
  RunningStats nll;
  for (double x : {1.0, 3.0}) nll.add(x);
  const PerplexityEstimate e = perplexity_from_nll(nll);
  EXPECT_DOUBLE_EQ(e.ppl, std::exp(2.0));
  EXPECT_DOUBLE_EQ(e.ppl_stderr, std::exp(2.0) * 1.0);  // var 1, n - 1 = 1
}

TEST(LogSoftmax, HandDerivedValues) {
  // logits (0, ln 3): probabilities 1/4 and 3/4.
  const float logits[2] = {0.0f, static_cast<float>(std::log(3.0))};
  std::vector<double> out;
  log_softmax(logits, 2, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_NEAR(out[0], std::log(0.25), 1e-7);
  EXPECT_NEAR(out[1], std::log(0.75), 1e-7);
  // Huge equal logits must not overflow: each is -ln 2.
  const float big[2] = {1000.0f, 1000.0f};
  log_softmax(big, 2, out);
  EXPECT_DOUBLE_EQ(out[0], -std::log(2.0));
  EXPECT_DOUBLE_EQ(out[1], -std::log(2.0));
  // -inf entries are probability 0.
  const float with_inf[3] = {0.0f, -std::numeric_limits<float>::infinity(), 0.0f};
  log_softmax(with_inf, 3, out);
  EXPECT_DOUBLE_EQ(out[0], -std::log(2.0));
  EXPECT_TRUE(std::isinf(out[1]) && out[1] < 0);
}

TEST(LogSoftmax, NonFiniteRowsAreErrors) {
  const float nan_row[2] = {0.0f, std::numeric_limits<float>::quiet_NaN()};
  const float inf_row[2] = {0.0f, std::numeric_limits<float>::infinity()};
  const float dead_row[2] = {-std::numeric_limits<float>::infinity(),
                             -std::numeric_limits<float>::infinity()};
  std::vector<double> out;
  EXPECT_THROW(log_softmax(nan_row, 2, out), Error);
  EXPECT_THROW(log_softmax(inf_row, 2, out), Error);
  EXPECT_THROW(log_softmax(dead_row, 2, out), Error);
}

TEST(LogSoftmax, ArgmaxTakesTheLowestIndexOnTies) {
  const float v[5] = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f};
  EXPECT_EQ(argmax(v, 5), 1);
  const double d[3] = {-2.0, -1.0, -1.5};
  EXPECT_EQ(argmax(d, 3), 1);
}

TEST(ProgressMeter, FrameShowsFractionRateAndEta) {
  EvalProgress p;
  p.windows_done = 5;
  p.n_windows = 10;
  p.tokens_scored = 2000;
  p.running_ppl = 4.25;
  // Half done in 10 s: 10 s left; 2000 tokens / 10 s = 200 tokens/s.
  EXPECT_EQ(ProgressMeter::render("ppl", p, 10.0, 10),
            "ppl [#####-----] 5/10 windows | 2000 tokens | PPL 4.2500 | 200 scored tok/s | ETA 0:10");
  p.running_kld = 0.0125;
  p.windows_done = 1;
  EXPECT_EQ(ProgressMeter::render("kld", p, 100.0, 10),
            "kld [#---------] 1/10 windows | 2000 tokens | PPL 4.2500 | KLD 0.012500 | 20 scored tok/s | ETA "
            "15:00");
  // Disabled meters write nothing.
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressMeter off(false, "x", f);
    off.update(p);
  }
  EXPECT_EQ(std::ftell(f), 0L);
  std::fclose(f);
}

}  // namespace
}  // namespace strata::eval
