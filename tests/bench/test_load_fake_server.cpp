// The load generator against the in-process fake server, which sends tokens at known times:
// the measured TTFT / ITL / TPOT / E2E, their percentiles and the throughput must equal the
// known values within timer resolution, failures must be classified, and requests must leave
// at the scheduled times.
#include <gtest/gtest.h>

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

// Scheduling noise on a shared 2-core machine: the fake server's sleeps and the client's
// wake-ups are each late by up to a few ms under load. Comparisons with the server's own
// record of when it actually wrote each token are much tighter.
constexpr double kNominalTolMs = 6.0;
constexpr double kActualTolMs = 1.5;

// Four requests with known timings: (TTFT, ITL, tokens) = (40,10,2) (80,20,3) (120,30,4) (160,40,5).
const std::vector<std::string> kKnownPrompts = {"ttft=40 itl=10 n=2", "ttft=80 itl=20 n=3",
                                                "ttft=120 itl=30 n=4", "ttft=160 itl=40 n=5"};

TEST(LoadAgainstFakeServer, KnownTimingsGiveKnownMetrics) {
  with_retries([](SoftCheck& check) {
    FakeOpenAiServer server(prompt_scenarios());
    const LoadResult result = run_load(requests_for(kKnownPrompts), options_for(server));
    for (size_t i = 0; i < 4; ++i) {
      const RequestRecord& r = result.records[i];
      ASSERT_TRUE(r.success) << r.error_class << ": " << r.error_message;
      const double ttft = 40.0 * static_cast<double>(i + 1), itl = 10.0 * static_cast<double>(i + 1);
      const std::string req = "request " + std::to_string(i) + " ";
      check.near(r.ttft_s * 1e3, ttft, kNominalTolMs, req + "TTFT");
      ASSERT_EQ(r.itl_s.size(), i + 1);
      for (double gap : r.itl_s) check.near(gap * 1e3, itl, kNominalTolMs, req + "ITL");
      check.near(r.e2e_s * 1e3, ttft + itl * static_cast<double>(i + 1), kNominalTolMs, req + "E2E");
      EXPECT_EQ(r.output_tokens, static_cast<int64_t>(i) + 2);
      EXPECT_TRUE(r.output_tokens_from_usage);
      EXPECT_EQ(r.input_tokens, 3);  // the fake server counts prompt words
    }
    const BenchMetrics m = compute_metrics(result.records, result.duration_s, {});
    EXPECT_EQ(m.completed, 4);
    // TTFT [40, 80, 120, 160]: rank of p90 = 2.7, of p99 = 2.97.
    check.near(m.ttft_ms.mean, 100, kNominalTolMs, "TTFT mean");
    check.near(m.ttft_ms.median, 100, kNominalTolMs, "TTFT median");
    check.near(m.ttft_ms.p90, 148, kNominalTolMs, "TTFT p90");
    check.near(m.ttft_ms.p99, 158.8, kNominalTolMs, "TTFT p99");
    // TPOT per request [10, 20, 30, 40] (request-weighted).
    check.near(m.tpot_ms.mean, 25, kNominalTolMs, "TPOT mean");
    check.near(m.tpot_ms.median, 25, kNominalTolMs, "TPOT median");
    check.near(m.tpot_ms.p90, 37, kNominalTolMs, "TPOT p90");
    check.near(m.tpot_ms.p99, 39.7, kNominalTolMs, "TPOT p99");
    // ITL pooled [10, 20,20, 30,30,30, 40,40,40,40] (token-weighted): mean 30, not 25.
    EXPECT_EQ(m.itl_ms.count, 10u);
    check.near(m.itl_ms.mean, 30, kNominalTolMs, "ITL mean");
    check.near(m.itl_ms.median, 30, kNominalTolMs, "ITL median");
    check.near(m.itl_ms.p90, 40, kNominalTolMs, "ITL p90");
    check.near(m.itl_ms.p99, 40, kNominalTolMs, "ITL p99");
    // E2E [50, 120, 210, 320].
    check.near(m.e2e_ms.mean, 175, kNominalTolMs, "E2E mean");
    check.near(m.e2e_ms.median, 165, kNominalTolMs, "E2E median");
    check.near(m.e2e_ms.p90, 287, kNominalTolMs, "E2E p90");
    check.near(m.e2e_ms.p99, 316.7, kNominalTolMs, "E2E p99");
    // Everything starts at once, so the run lasts as long as the longest request (320 ms):
    // 14 output tokens, 12 input tokens and 4 requests in 0.32 s.
    const double rel = kNominalTolMs / 320;
    check.near(m.duration_s * 1e3, 320, kNominalTolMs, "duration");
    check.near(m.output_throughput, 14 / 0.320, 14 / 0.320 * rel, "output throughput");
    check.near(m.request_throughput, 4 / 0.320, 4 / 0.320 * rel, "request throughput");
    check.near(m.input_throughput, 12 / 0.320, 12 / 0.320 * rel, "input throughput");
  });
}

TEST(LoadAgainstFakeServer, MeasurementsMatchTheServersActualSendTimes) {
  with_retries([](SoftCheck& check) {
    FakeOpenAiServer server(prompt_scenarios());
    const LoadResult result = run_load(requests_for(kKnownPrompts), options_for(server));
    const auto sent = server.sent_streams();
    ASSERT_EQ(sent.size(), 4u);
    for (const auto& s : sent) {
      const size_t i = static_cast<size_t>(std::find(kKnownPrompts.begin(), kKnownPrompts.end(), s.prompt) -
                                           kKnownPrompts.begin());
      ASSERT_LT(i, 4u);
      const RequestRecord& r = result.records[i];
      ASSERT_EQ(r.itl_s.size() + 1, s.token_sent_s.size());
      for (size_t k = 0; k < r.itl_s.size(); ++k)
        check.near(r.itl_s[k] * 1e3, (s.token_sent_s[k + 1] - s.token_sent_s[k]) * 1e3, kActualTolMs, "ITL");
      // Client and server share the steady clock: every token the client timestamps must have
      // been written by the server just before (loopback delivery plus the loop's wake-up).
      const double offset_s = std::chrono::duration<double>(result.start - server.start_time()).count();
      double client_receive_s = offset_s + r.sent_s + r.ttft_s;
      for (size_t k = 0; k < s.token_sent_s.size(); ++k) {
        if (k > 0) client_receive_s += r.itl_s[k - 1];
        check.near((client_receive_s - s.token_sent_s[k]) * 1e3, 0.0, kActualTolMs,
                   "receive time - send time of token " + std::to_string(k));
      }
      // The client's TTFT also covers connecting and sending the request: never shorter than
      // what the server saw. A soft check, retried like the others: the server stamps a token
      // after its write returns, and a descheduled server thread can stamp it late.
      check.that(r.ttft_s >= s.token_sent_s[0] - s.received_s - 5e-5,
                 "TTFT " + std::to_string(r.ttft_s) + " s covers the server's first-token interval");
    }
  });
}

TEST(LoadAgainstFakeServer, OneMillisecondGapsAreResolved) {
  with_retries([](SoftCheck& check) {
    FakeOpenAiServer server(prompt_scenarios());
    const LoadResult result = run_load(requests_for({"ttft=2 itl=1 n=200"}), options_for(server));
    ASSERT_TRUE(result.records[0].success);
    const Distribution itl = summarize(result.records[0].itl_s);
    EXPECT_EQ(itl.count, 199u);
    // The server keeps an absolute schedule, so the mean gap is exact even if single sends slip.
    check.near(itl.mean * 1e3, 1.0, 0.1, "mean ITL");
    check.near(itl.median * 1e3, 1.0, 0.25, "median ITL");
    check.that(result.overhead.mean_us < 200.0, "client cost per read below 200 us");
    check.that(result.overhead.reads >= 190, "tokens 1 ms apart arrive in separate reads");
  });
}

TEST(LoadAgainstFakeServer, ChatStreamsSkipTheRoleChunk) {
  with_retries([](SoftCheck& check) {
    FakeOpenAiServer server(prompt_scenarios());
    // The role chunk goes out at once; the first content 30 ms later.
    const LoadResult result = run_load(requests_for({"ttft=30 itl=5 n=4 comments=1"}, EndpointKind::kChat),
                                       options_for(server, EndpointKind::kChat));
    const RequestRecord& r = result.records[0];
    ASSERT_TRUE(r.success) << r.error_message;
    check.near(r.ttft_s * 1e3, 30, kNominalTolMs, "TTFT");
    EXPECT_EQ(r.content_chunks, 4);
    EXPECT_EQ(r.output_tokens, 4);
  });
}

TEST(LoadAgainstFakeServer, UsageOverridesChunkCountsAndItsAbsenceIsHandled) {
  with_retries([](SoftCheck& check) {
    FakeOpenAiServer server(prompt_scenarios());
    // Request 0: the server reports 8 completion tokens for 4 chunks (two tokens per chunk);
    // request 1: no usage at all.
    const LoadResult result = run_load(
        requests_for({"ttft=10 itl=10 n=4 completion=8", "ttft=10 itl=10 n=4 usage=0"}), options_for(server));
    const RequestRecord& a = result.records[0];
    const RequestRecord& b = result.records[1];
    ASSERT_TRUE(a.success && b.success);
    EXPECT_EQ(a.output_tokens, 8);
    EXPECT_TRUE(a.output_tokens_from_usage);
    EXPECT_EQ(b.output_tokens, 4);
    EXPECT_FALSE(b.output_tokens_from_usage);
    EXPECT_EQ(b.input_tokens, 1001);  // the workload's estimate for request 1
    EXPECT_FALSE(b.input_tokens_from_usage);
    // TPOT = (E2E - TTFT) / (tokens - 1): 30 ms / 7 with usage, 30 ms / 3 without.
    check.near(*request_tpot_s(a) * 1e3, 30.0 / 7, kNominalTolMs / 7, "TPOT with usage");
    check.near(*request_tpot_s(b) * 1e3, 10.0, kNominalTolMs / 3, "TPOT without usage");
  });
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
  // The stalled request ends the run at its 0.5 s timeout, not later.
  EXPECT_LT(result.duration_s, 2.0);
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
  with_retries([](SoftCheck& check) {
    FakeOpenAiServer server(prompt_scenarios());
    // 12 requests of 100 ms with at most 3 in flight: 4 waves, about 400 ms.
    const std::vector<std::string> prompts(12, "ttft=0 itl=20 n=6");
    const LoadResult result =
        run_load(requests_for(prompts), options_for(server, EndpointKind::kCompletions, 3));
    EXPECT_EQ(result.peak_in_flight, 3);
    // Soft (retried): the server counts a stream as active until its handler returns, which can
    // be just after the client has seen [DONE] and sent the next request.
    check.that(server.peak_active() == 3,
               "server saw " + std::to_string(server.peak_active()) + " streams at once");
    check.near(result.duration_s * 1e3, 400, 4 * kNominalTolMs, "duration");
    for (const RequestRecord& r : result.records) {
      EXPECT_TRUE(r.success);
      check.near(r.e2e_s * 1e3, 100, kNominalTolMs, "E2E");  // latency counts from the actual send
    }
  });
}

TEST(LoadAgainstFakeServer, RequestsLeaveAtTheScheduledTimes) {
  with_retries([](SoftCheck& check) {
    FakeOpenAiServer server(prompt_scenarios());
    const double rate = 100.0;
    const std::vector<double> offsets = arrival_offsets(80, rate, 1.0, 123);
    const LoadResult result =
        run_load(requests_for(std::vector<std::string>(80, "n=1"), EndpointKind::kCompletions, offsets),
                 options_for(server));
    std::vector<double> lateness_ms;
    for (size_t i = 0; i < offsets.size(); ++i) {
      EXPECT_NEAR(result.records[i].scheduled_s, offsets[i], 1e-12);
      EXPECT_GE(result.records[i].sent_s, offsets[i] - 1e-6);  // never early (up to time-point rounding)
      lateness_ms.push_back((result.records[i].sent_s - offsets[i]) * 1e3);
    }
    // A wake-up is typically late by tens of microseconds; a starved process (other tests on
    // the same 2 cores) can be late by tens of ms now and then, so robust statistics are used.
    const Distribution late = summarize(lateness_ms);
    check.near(late.median, 0.0, 1.0, "median lateness of sends (ms)");
    check.near(late.p90, 0.0, kNominalTolMs, "p90 lateness of sends (ms)");
    // The server saw the scheduled gaps between consecutive requests.
    const std::vector<double> received = server.receipt_times();
    ASSERT_EQ(received.size(), 80u);
    std::vector<double> gap_error_ms;
    for (size_t i = 1; i < received.size(); ++i)
      gap_error_ms.push_back(std::abs((received[i] - received[i - 1]) - (offsets[i] - offsets[i - 1])) * 1e3);
    check.near(summarize(gap_error_ms).median, 0.0, 1.0, "median |gap at server - scheduled gap| (ms)");
    // And the realised rate is the requested one within Poisson noise (79 gaps: 11% is 1 sigma).
    check.near(79.0 / (received.back() - received.front()), rate, 0.3 * rate, "realised rate");
  });
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
  o.slo.ttft_ms = 1000;
  const BenchServeResult result = run_bench_serve(o);
  EXPECT_EQ(result.model, "fake-model");
  ASSERT_EQ(result.runs.size(), 2u);
  for (const BenchRun& run : result.runs) {
    EXPECT_EQ(run.metrics.completed, 6);
    EXPECT_EQ(run.metrics.total_output_tokens, 18);  // max_tokens honoured by the fake server
    EXPECT_EQ(run.metrics.total_input_tokens, 30);   // usage: 5 words each
    EXPECT_EQ(run.metrics.good_requests, 6);
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
