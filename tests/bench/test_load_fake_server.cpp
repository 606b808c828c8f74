// The load generator against the in-process fake server, which logs when it read each request
// and when it began writing each token. The tests assert what the client guarantees on any
// machine, however loaded: counts, ordering, causality against the server's log on the shared
// clock, latencies derived from the client's own timestamps, and lower bounds from the server's
// schedule. How close the measured latencies come to the true ones is a measurement, not a
// test: `strata bench serve --calibrate` reports it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "bench/arrivals.h"
#include "bench/bench_serve.h"
#include "bench/fake_server.h"
#include "bench/metrics.h"
#include "bench/stream_client.h"
#include "core/check.h"
#include "fake_scenarios.h"

namespace strata::bench {
namespace {

using namespace test_support;

// Four requests with known timings: (TTFT, ITL, tokens) = (40,10,2) (80,20,3) (120,30,4) (160,40,5).
const std::vector<std::string> kKnownPrompts = {"ttft=40 itl=10 n=2", "ttft=80 itl=20 n=3",
                                                "ttft=120 itl=30 n=4", "ttft=160 itl=40 n=5"};

double mean_of(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

TEST(LoadAgainstFakeServer, KnownScenariosGiveExactCountsAndMetricsOfTheRecords) {
  FakeOpenAiServer server(prompt_scenarios());
  const LoadResult result = run_load(requests_for(kKnownPrompts), options_for(server));
  ASSERT_EQ(result.records.size(), 4u);
  std::vector<double> ttft_ms, e2e_ms, tpot_ms, itl_ms;
  for (size_t i = 0; i < 4; ++i) {
    const RequestRecord& r = result.records[i];
    ASSERT_TRUE(r.success) << r.error_class << ": " << r.error_message;
    EXPECT_EQ(r.content_chunks, static_cast<int64_t>(i) + 2);
    EXPECT_EQ(r.output_tokens, static_cast<int64_t>(i) + 2);
    EXPECT_TRUE(r.output_tokens_from_usage);
    EXPECT_EQ(r.input_tokens, 3);  // the fake server counts prompt words
    EXPECT_TRUE(r.input_tokens_from_usage);
    EXPECT_EQ(r.scheduled_s, 0.0);
    // The server writes token k no earlier than TTFT + k * ITL after reading the request.
    EXPECT_GE(r.ttft_s, 0.040 * static_cast<double>(i + 1) - kClockSlackS);
    // E2E: TTFT + (tokens - 1) * ITL = 40 (i + 1) + 10 (i + 1) (i + 1) ms.
    EXPECT_GE(r.e2e_s, 0.010 * static_cast<double>(i + 1) * static_cast<double>(i + 5) - kClockSlackS);
    ttft_ms.push_back(r.ttft_s * 1e3);
    e2e_ms.push_back(r.e2e_s * 1e3);
    tpot_ms.push_back((r.e2e_s - r.ttft_s) * 1e3 / static_cast<double>(r.output_tokens - 1));
    for (double gap : r.itl_s) itl_ms.push_back(gap * 1e3);
  }
  // The metrics are the records' statistics (numpy percentiles, see metrics.h), whatever the
  // records' values were.
  const BenchMetrics m = compute_metrics(result.records, result.duration_s, {});
  EXPECT_EQ(m.completed, 4);
  EXPECT_EQ(m.failed, 0);
  EXPECT_EQ(m.total_output_tokens, 14);
  EXPECT_EQ(m.total_input_tokens, 12);
  EXPECT_EQ(m.ttft_ms.count, 4u);
  EXPECT_EQ(m.tpot_ms.count, 4u);
  EXPECT_EQ(m.itl_ms.count, 10u);  // token-weighted: 1 + 2 + 3 + 4 gaps
  EXPECT_NEAR(m.ttft_ms.mean, mean_of(ttft_ms), 1e-9);
  EXPECT_NEAR(m.tpot_ms.mean, mean_of(tpot_ms), 1e-9);
  EXPECT_NEAR(m.itl_ms.mean, mean_of(itl_ms), 1e-9);
  EXPECT_NEAR(m.e2e_ms.mean, mean_of(e2e_ms), 1e-9);
  std::sort(ttft_ms.begin(), ttft_ms.end());
  std::sort(e2e_ms.begin(), e2e_ms.end());
  EXPECT_NEAR(m.ttft_ms.median, (ttft_ms[1] + ttft_ms[2]) / 2, 1e-9);
  EXPECT_NEAR(m.e2e_ms.p90, e2e_ms[2] + 0.7 * (e2e_ms[3] - e2e_ms[2]), 1e-9);  // rank 0.9 * 3 = 2.7
  EXPECT_NEAR(m.e2e_ms.max, e2e_ms[3], 1e-9);
  // Everything starts at once; the run ends with its last request, no earlier than its E2E.
  EXPECT_EQ(m.duration_s, result.duration_s);
  EXPECT_GE(result.duration_s, e2e_ms[3] / 1e3);
  EXPECT_DOUBLE_EQ(m.output_throughput, 14 / result.duration_s);
  EXPECT_DOUBLE_EQ(m.input_throughput, 12 / result.duration_s);
  EXPECT_DOUBLE_EQ(m.request_throughput, 4 / result.duration_s);
}

TEST(LoadAgainstFakeServer, MeasurementsMatchTheServersActualSendTimes) {
  FakeOpenAiServer server(prompt_scenarios());
  const LoadResult result = run_load(requests_for(kKnownPrompts), options_for(server));
  const auto sent = server.sent_streams();
  ASSERT_EQ(sent.size(), 4u);
  for (size_t i = 0; i < kKnownPrompts.size(); ++i) {
    const auto* s = stream_for(sent, kKnownPrompts[i]);
    ASSERT_NE(s, nullptr) << kKnownPrompts[i];
    expect_consistent_with_server(result, server, result.records[i], *s, kKnownPrompts[i]);
  }
}

TEST(LoadAgainstFakeServer, LongStreamsRecordEveryGap) {
  // 200 tokens 1 ms apart: every gap is recorded, in order, and none before the server wrote it.
  FakeOpenAiServer server(prompt_scenarios());
  const LoadResult result = run_load(requests_for({"ttft=2 itl=1 n=200"}), options_for(server));
  const RequestRecord& r = result.records[0];
  ASSERT_TRUE(r.success) << r.error_message;
  EXPECT_EQ(r.itl_s.size(), 199u);
  const auto sent = server.sent_streams();
  ASSERT_EQ(sent.size(), 1u);
  expect_consistent_with_server(result, server, r, sent[0], "200 tokens");
  EXPECT_GE(result.overhead.reads, 1);
  EXPECT_LE(result.overhead.mean_us, result.overhead.max_us);
  EXPECT_GT(result.overhead.cpu_s, 0.0);
}

TEST(LoadAgainstFakeServer, ChatStreamsSkipTheRoleChunk) {
  // The role chunk goes out at once; the first content 100 ms later. Counting the role chunk
  // would give 5 chunks and a TTFT below the server's schedule.
  FakeOpenAiServer server(prompt_scenarios());
  const std::string prompt = "ttft=100 itl=5 n=4 comments=1";
  const LoadResult result =
      run_load(requests_for({prompt}, EndpointKind::kChat), options_for(server, EndpointKind::kChat));
  const RequestRecord& r = result.records[0];
  ASSERT_TRUE(r.success) << r.error_message;
  EXPECT_EQ(r.content_chunks, 4);
  EXPECT_EQ(r.output_tokens, 4);
  EXPECT_GE(r.ttft_s, 0.100 - kClockSlackS);
  const auto sent = server.sent_streams();
  ASSERT_EQ(sent.size(), 1u);
  expect_consistent_with_server(result, server, r, sent[0], prompt);
}

TEST(LoadAgainstFakeServer, UsageOverridesChunkCountsAndItsAbsenceIsHandled) {
  FakeOpenAiServer server(prompt_scenarios());
  // Request 0: the server reports 8 completion tokens for 4 chunks (two tokens per chunk);
  // request 1: no usage at all.
  const LoadResult result = run_load(
      requests_for({"ttft=10 itl=10 n=4 completion=8", "ttft=10 itl=10 n=4 usage=0"}), options_for(server));
  const RequestRecord& a = result.records[0];
  const RequestRecord& b = result.records[1];
  ASSERT_TRUE(a.success && b.success);
  EXPECT_EQ(a.content_chunks, 4);
  EXPECT_EQ(a.output_tokens, 8);
  EXPECT_TRUE(a.output_tokens_from_usage);
  EXPECT_EQ(b.output_tokens, 4);
  EXPECT_FALSE(b.output_tokens_from_usage);
  EXPECT_EQ(b.input_tokens, 1001);  // the workload's estimate for request 1
  EXPECT_FALSE(b.input_tokens_from_usage);
  // TPOT = (E2E - TTFT) / (tokens - 1): divided by 7 with usage, by 3 without.
  ASSERT_TRUE(request_tpot_s(a) && request_tpot_s(b));
  EXPECT_NEAR(*request_tpot_s(a), (a.e2e_s - a.ttft_s) / 7, 1e-12);
  EXPECT_NEAR(*request_tpot_s(b), (b.e2e_s - b.ttft_s) / 3, 1e-12);
  EXPECT_GE(a.e2e_s - a.ttft_s, 0.0);
}

TEST(LoadAgainstFakeServer, AwkwardFramingStillParses) {
  FakeOpenAiServer server(prompt_scenarios());
  const LoadResult result = run_load(
      requests_for({"n=6 bytes=1", "n=6 chunked=0", "n=6 chunked=0 bytes=1 comments=1", "n=5 itl=1 bytes=1"}),
      options_for(server));
  for (const RequestRecord& r : result.records) {
    EXPECT_TRUE(r.success) << r.error_class << ": " << r.error_message;
    EXPECT_GE(r.content_chunks, 5);
  }
}

TEST(LoadAgainstFakeServer, FailuresAreClassified) {
  FakeOpenAiServer server(prompt_scenarios());
  const std::vector<std::string> prompts = {"status=404",
                                            "status=503",
                                            "n=5 fault=error after=2",
                                            "n=5 fault=malformed",
                                            "n=5 fault=close after=1",
                                            "n=5 fault=stall after=1",
                                            "n=3 fault=nodone",
                                            "n=0",
                                            "n=3 status=429 bytes=1"};
  const LoadResult result =
      run_load(requests_for(prompts), options_for(server, EndpointKind::kCompletions, 0, 0.5));
  const std::vector<std::string> expected = {"http_404",         "http_503",         "stream_error",
                                             "malformed_stream", "malformed_stream", "timeout",
                                             "malformed_stream", "empty_output",     "http_429"};
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_FALSE(result.records[i].success) << prompts[i];
    EXPECT_EQ(result.records[i].error_class, expected[i])
        << prompts[i] << ": " << result.records[i].error_message;
  }
  EXPECT_NE(result.records[1].error_message.find("fake error"), std::string::npos);  // from the JSON body
  const BenchMetrics m = compute_metrics(result.records, result.duration_s, {});
  EXPECT_EQ(m.failed, 9);
  EXPECT_EQ(m.errors.at("malformed_stream"), 3);
  // The stalled request (the fake server never finishes it) ends at its 0.5 s timeout.
  EXPECT_GE(result.duration_s, 0.5);
}

TEST(LoadAgainstFakeServer, RefusedConnectionsAreConnectErrors) {
  uint16_t port;
  {
    FakeOpenAiServer server(prompt_scenarios());
    port = server.port();
  }  // closed: nothing listens there now
  LoadOptions o;
  o.target = parse_http_url("http://127.0.0.1:" + std::to_string(port));
  o.path = "/v1/completions";
  const LoadResult result = run_load(requests_for({"n=1", "n=1"}), o);
  for (const RequestRecord& r : result.records) EXPECT_EQ(r.error_class, kErrorConnect) << r.error_message;
}

TEST(LoadAgainstFakeServer, MaxConcurrencyIsRespected) {
  FakeOpenAiServer server(prompt_scenarios());
  // 12 requests of at least 100 ms (6 tokens 20 ms apart) with at most 3 in flight.
  std::vector<std::string> prompts;
  for (int i = 0; i < 12; ++i) prompts.push_back("ttft=0 itl=20 n=6 id=" + std::to_string(i));
  const LoadResult result =
      run_load(requests_for(prompts), options_for(server, EndpointKind::kCompletions, 3));
  EXPECT_EQ(result.peak_in_flight, 3);  // the first three leave together, before any can finish
  const auto sent = server.sent_streams();
  ASSERT_EQ(sent.size(), 12u);
  std::vector<std::pair<double, double>> client_busy, server_busy;  // [start, end] per request
  const double offset = run_offset_s(result, server);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const RequestRecord& r = result.records[i];
    const auto* s = stream_for(sent, prompts[i]);
    ASSERT_NE(s, nullptr) << prompts[i];
    expect_consistent_with_server(result, server, r, *s, prompts[i]);
    // Latencies count from the actual send (the check above: sent + E2E within the run), and
    // each request lasts at least its 100 ms schedule.
    EXPECT_GE(r.e2e_s, 0.100 - kClockSlackS);
    client_busy.push_back({r.sent_s, r.sent_s + r.e2e_s});
    server_busy.push_back({s->received_s - offset, s->token_write_s.back() - offset});
  }
  // A request in flight on the client (sent, last content not yet seen) is never one of more than
  // three; what the server saw of each stream (request read .. last token written) lies inside
  // the client's interval, so the server never had more than three either.
  auto most_overlapping = [](const std::vector<std::pair<double, double>>& spans) {
    int most = 0;
    for (const auto& [at, unused] : spans) {
      int n = 0;
      for (const auto& [b, e] : spans) n += b <= at && at < e;
      most = std::max(most, n);
    }
    return most;
  };
  EXPECT_LE(most_overlapping(client_busy), 3);
  EXPECT_LE(most_overlapping(server_busy), 3);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_GE(server_busy[i].first, client_busy[i].first - kClockSlackS);
    EXPECT_LE(server_busy[i].second, client_busy[i].second + kClockSlackS);
  }
  // Four requests queue behind each slot, each lasting at least 100 ms.
  EXPECT_GE(result.duration_s, 0.400 - kClockSlackS);
}

TEST(LoadAgainstFakeServer, RequestsLeaveAtTheScheduledTimes) {
  FakeOpenAiServer server(prompt_scenarios());
  const std::vector<double> offsets = arrival_offsets(80, 100.0, 1.0, 123);
  const LoadResult result =
      run_load(requests_for(std::vector<std::string>(80, "n=1"), EndpointKind::kCompletions, offsets),
               options_for(server));
  std::vector<double> sends;
  for (size_t i = 0; i < offsets.size(); ++i) {
    const RequestRecord& r = result.records[i];
    EXPECT_TRUE(r.success) << r.error_message;
    EXPECT_NEAR(r.scheduled_s, offsets[i], 1e-12);
    EXPECT_GE(r.sent_s, offsets[i] - 1e-6);  // never early (up to time-point rounding)
    if (i > 0) {
      EXPECT_GE(r.sent_s, result.records[i - 1].sent_s);  // in schedule order
    }
    sends.push_back(run_offset_s(result, server) + r.sent_s);
  }
  // Each request was read by the server after it was sent, so the k-th earliest receipt is no
  // earlier than the k-th earliest send. How late sends are on this machine is reported by
  // `strata bench serve --calibrate`.
  const std::vector<double> received = server.receipt_times();
  ASSERT_EQ(received.size(), 80u);
  for (size_t k = 0; k < received.size(); ++k) EXPECT_GE(received[k], sends[k] - kClockSlackS) << k;
}

TEST(LoadAgainstFakeServer, ModelDiscovery) {
  FakeOpenAiServer server(prompt_scenarios());
  EXPECT_EQ(discover_model(parse_http_url(server.url()), ""), "fake-model");
  EXPECT_EQ(discover_model(parse_http_url(server.url() + "/v1"), "key"), "fake-model");
}

TEST(BenchServe, SweepRunsEveryLevelWithTheSameWorkload) {
  FakeOpenAiServer server(prompt_scenarios());
  BenchServeOptions o;
  o.url = server.url();
  o.num_prompts = 6;
  o.input_len = 5;
  o.output_len = 3;
  o.sweep_concurrency = {1, 3};
  o.slo.ttft_ms = 20;
  const BenchServeResult result = run_bench_serve(o);
  EXPECT_EQ(result.model, "fake-model");
  ASSERT_EQ(result.runs.size(), 2u);
  for (const BenchRun& run : result.runs) {
    EXPECT_EQ(run.metrics.completed, 6);
    EXPECT_EQ(run.metrics.total_output_tokens, 18);  // max_tokens honoured by the fake server
    EXPECT_EQ(run.metrics.total_input_tokens, 30);   // usage: 5 words each
    int64_t good = 0;  // requests meeting the 20 ms TTFT objective, however fast this machine was
    for (const RequestRecord& r : run.load.records) good += r.success && r.ttft_s * 1e3 <= 20;
    EXPECT_EQ(run.metrics.good_requests, good);
    ASSERT_TRUE(run.metrics.goodput.has_value());
    EXPECT_DOUBLE_EQ(*run.metrics.goodput, static_cast<double>(good) / run.metrics.duration_s);
    EXPECT_EQ(run.load.peak_in_flight, run.max_concurrency);
  }
}

TEST(BenchServe, InvalidOptionsThrow) {
  BenchServeOptions o;
  EXPECT_THROW(run_bench_serve(o), Error);  // no URL
  o.url = "http://127.0.0.1:1";
  o.timeout_s = 0;
  EXPECT_THROW(run_bench_serve(o), Error);
  EXPECT_THROW(parse_concurrency_list("1,,4"), Error);
  EXPECT_THROW(parse_concurrency_list("0"), Error);
  EXPECT_EQ(parse_concurrency_list("1,4,16,64"), (std::vector<int64_t>{1, 4, 16, 64}));
  EXPECT_TRUE(std::isinf(parse_request_rate("inf")));
  EXPECT_DOUBLE_EQ(parse_request_rate("2.5"), 2.5);
  EXPECT_THROW(parse_request_rate("-1"), Error);
  EXPECT_THROW(parse_request_rate("fast"), Error);
}

}  // namespace
}  // namespace strata::bench
