// Metric definitions checked against values derived by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "bench/metrics.h"

namespace strata::bench {
namespace {

TEST(Percentile, LinearInterpolationLikeNumpy) {
  // numpy.percentile([1, 2, 3, 4], q): rank = q/100 * 3.
  const std::vector<double> v{1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 0), 1.0);
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 90), 3.7);
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 99), 3.97);
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 100), 4.0);
  EXPECT_DOUBLE_EQ(percentile_sorted({7.0}, 99), 7.0);
}

TEST(Summarize, UnsortedInputAndEmpty) {
  const Distribution d = summarize({300, 50, 100});
  EXPECT_EQ(d.count, 3u);
  EXPECT_DOUBLE_EQ(d.mean, 150);
  EXPECT_DOUBLE_EQ(d.median, 100);
  EXPECT_DOUBLE_EQ(d.p90, 260);  // rank 1.8: 100 + 0.8 * 200
  EXPECT_DOUBLE_EQ(d.p99, 296);  // rank 1.98
  EXPECT_DOUBLE_EQ(d.min, 50);
  EXPECT_DOUBLE_EQ(d.max, 300);
  const Distribution e = summarize({});
  EXPECT_EQ(e.count, 0u);
  EXPECT_TRUE(std::isnan(e.mean) && std::isnan(e.p99));
}

RequestRecord ok(double ttft, std::vector<double> itl, double e2e, int64_t out, bool usage, int64_t in) {
  RequestRecord r;
  r.success = true;
  r.ttft_s = ttft;
  r.itl_s = std::move(itl);
  r.e2e_s = e2e;
  r.content_chunks = static_cast<int64_t>(r.itl_s.size()) + 1;
  r.output_tokens = out;
  r.output_tokens_from_usage = usage;
  r.input_tokens = in;
  r.input_tokens_from_usage = usage;
  return r;
}

RequestRecord failed(const char* cls) {
  RequestRecord r;
  r.error_class = cls;
  return r;
}

// A: 4 chunks; B: 2 chunks but usage says 3 tokens; C: one token; D, E failed.
std::vector<RequestRecord> sample() {
  return {ok(0.100, {0.020, 0.030, 0.050}, 0.200, 4, false, 10), ok(0.300, {0.010}, 0.310, 3, true, 20),
          ok(0.050, {}, 0.050, 1, true, 30), failed("http_503"), failed(kErrorTimeout)};
}

TEST(ComputeMetrics, HandDerivedValues) {
  const BenchMetrics m = compute_metrics(sample(), 2.0, {});
  EXPECT_EQ(m.completed, 3);
  EXPECT_EQ(m.failed, 2);
  EXPECT_EQ(m.errors.at("http_503"), 1);
  EXPECT_EQ(m.errors.at("timeout"), 1);
  EXPECT_EQ(m.total_input_tokens, 60);
  EXPECT_EQ(m.total_output_tokens, 8);
  EXPECT_EQ(m.input_tokens_from_usage, 2);
  EXPECT_DOUBLE_EQ(m.request_throughput, 1.5);
  EXPECT_DOUBLE_EQ(m.input_throughput, 30.0);
  EXPECT_DOUBLE_EQ(m.output_throughput, 4.0);
  EXPECT_DOUBLE_EQ(m.total_token_throughput, 34.0);
  // TTFT ms [100, 300, 50].
  EXPECT_NEAR(m.ttft_ms.mean, 150, 1e-9);
  EXPECT_NEAR(m.ttft_ms.median, 100, 1e-9);
  EXPECT_NEAR(m.ttft_ms.p90, 260, 1e-9);
  EXPECT_NEAR(m.ttft_ms.p99, 296, 1e-9);
  // TPOT: A (200-100)/3 = 33.333 ms, B (310-300)/2 = 5 ms, C excluded (one token).
  EXPECT_EQ(m.tpot_ms.count, 2u);
  EXPECT_NEAR(m.tpot_ms.mean, (100.0 / 3 + 5) / 2, 1e-9);
  EXPECT_NEAR(m.tpot_ms.median, (100.0 / 3 + 5) / 2, 1e-9);
  EXPECT_NEAR(m.tpot_ms.p90, 5 + 0.9 * (100.0 / 3 - 5), 1e-9);
  EXPECT_NEAR(m.tpot_ms.p99, 5 + 0.99 * (100.0 / 3 - 5), 1e-9);
  // ITL ms pooled [20, 30, 50, 10]: token-weighted, unlike TPOT.
  EXPECT_EQ(m.itl_ms.count, 4u);
  EXPECT_NEAR(m.itl_ms.mean, 27.5, 1e-9);
  EXPECT_NEAR(m.itl_ms.median, 25, 1e-9);
  EXPECT_NEAR(m.itl_ms.p90, 44, 1e-9);
  EXPECT_NEAR(m.itl_ms.p99, 49.4, 1e-9);
  // E2E ms [200, 310, 50].
  EXPECT_NEAR(m.e2e_ms.mean, 560.0 / 3, 1e-9);
  EXPECT_NEAR(m.e2e_ms.median, 200, 1e-9);
  EXPECT_NEAR(m.e2e_ms.p90, 288, 1e-9);
  EXPECT_NEAR(m.e2e_ms.p99, 307.8, 1e-9);
  EXPECT_FALSE(m.goodput.has_value());
}

TEST(ComputeMetrics, Goodput) {
  SloOptions both;
  both.ttft_ms = 150;
  both.tpot_ms = 20;  // A fails TPOT (33 ms), B fails TTFT (300 ms), C passes (TPOT counts as 0)
  BenchMetrics m = compute_metrics(sample(), 2.0, both);
  EXPECT_EQ(m.good_requests, 1);
  EXPECT_DOUBLE_EQ(*m.goodput, 0.5);

  SloOptions ttft_only;
  ttft_only.ttft_ms = 200;  // A and C
  m = compute_metrics(sample(), 2.0, ttft_only);
  EXPECT_DOUBLE_EQ(*m.goodput, 1.0);

  SloOptions e2e;
  e2e.e2e_ms = 200;  // A (exactly 200) and C; failed requests never count
  m = compute_metrics(sample(), 2.0, e2e);
  EXPECT_EQ(m.good_requests, 2);
}

TEST(ComputeMetrics, AllFailedGivesEmptyDistributions) {
  const BenchMetrics m = compute_metrics({failed(kErrorConnect), failed(kErrorConnect)}, 1.0, {});
  EXPECT_EQ(m.completed, 0);
  EXPECT_EQ(m.errors.at("connect_error"), 2);
  EXPECT_EQ(m.ttft_ms.count, 0u);
  EXPECT_TRUE(std::isnan(m.itl_ms.median));
  EXPECT_DOUBLE_EQ(m.output_throughput, 0.0);
}

}  // namespace
}  // namespace strata::bench
