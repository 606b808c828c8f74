#include "bench/client_calibration.h"

#include <cmath>
#include <cstdio>

#include "bench/arrivals.h"
#include "bench/fake_server.h"
#include "bench/openai_stream.h"

namespace strata::bench {
namespace {

CalibrationRow run_scenario(int64_t concurrency, double ttft_s, double itl_s, int64_t tokens,
                            int64_t requests) {
  FakeOpenAiServer server([&](const std::string&, const nlohmann::json&) {
    FakeResponse r;
    r.ttft_s = ttft_s;
    r.itl_s = itl_s;
    r.n_tokens = tokens;
    return r;
  });
  LoadOptions options;
  options.target = parse_http_url(server.url());
  options.path = endpoint_path(EndpointKind::kCompletions);
  options.max_concurrency = concurrency;
  options.timeout_s = 120.0;
  GenerationOptions gen;
  gen.model = "fake-model";
  BenchRequest request{"the of and to in", 5, tokens};
  std::vector<LoadRequest> load(static_cast<size_t>(requests),
                                LoadRequest{build_request_body(request, gen), 5, 0.0});
  const LoadResult result = run_load(load, options);
  const BenchMetrics m = compute_metrics(result.records, result.duration_s, {});
  CalibrationRow row;
  row.concurrency = concurrency;
  row.nominal_itl_ms = itl_s * 1e3;
  row.nominal_ttft_ms = ttft_s * 1e3;
  row.itl_ms = m.itl_ms;
  row.ttft_ms = m.ttft_ms;
  int64_t chunks = 0;
  for (const RequestRecord& r : result.records) chunks += r.content_chunks;
  row.chunks_per_s = result.duration_s > 0 ? static_cast<double>(chunks) / result.duration_s : 0.0;
  row.cpu_us_per_chunk = chunks > 0 ? result.overhead.cpu_s * 1e6 / static_cast<double>(chunks) : 0.0;
  row.failed = m.failed;
  row.overhead = result.overhead;
  return row;
}

}  // namespace

std::vector<CalibrationRow> calibrate_client(const std::vector<int64_t>& levels, int64_t tokens_per_request) {
  std::vector<CalibrationRow> rows;
  for (int64_t c : levels) {
    rows.push_back(run_scenario(c, 0.005, 0.001, tokens_per_request, 2 * c));
    rows.push_back(run_scenario(c, 0.0, 0.0, tokens_per_request * 10, c));
  }
  return rows;
}

void print_calibration(std::ostream& out, const std::vector<CalibrationRow>& rows) {
  out << "Client calibration against the in-process fake server (loopback, known token times)\n";
  char buf[300];
  std::snprintf(buf, sizeof buf, "%5s %9s %9s %9s %9s %9s %10s %11s %9s %9s %8s %6s\n", "conc", "itl_set",
                "itl_mean", "itl_p50", "itl_p99", "ttft_set", "ttft_p50", "chunks/s", "read_us", "read_p99",
                "cpu_us", "failed");
  out << buf;
  for (const CalibrationRow& r : rows) {
    auto ms = [](double v) {
      char b[32];
      std::snprintf(b, sizeof b, std::isfinite(v) ? "%.3f" : "-", v);
      return std::string(b);
    };
    const std::string set = r.nominal_itl_ms > 0 ? ms(r.nominal_itl_ms) : "asap";
    std::snprintf(buf, sizeof buf, "%5lld %9s %9s %9s %9s %9s %10s %11.0f %9.2f %9.2f %8.2f %6lld\n",
                  static_cast<long long>(r.concurrency), set.c_str(), ms(r.itl_ms.mean).c_str(),
                  ms(r.itl_ms.median).c_str(), ms(r.itl_ms.p99).c_str(), ms(r.nominal_ttft_ms).c_str(),
                  ms(r.ttft_ms.median).c_str(), r.chunks_per_s, r.overhead.mean_us, r.overhead.p99_us,
                  r.cpu_us_per_chunk, static_cast<long long>(r.failed));
    out << buf;
  }
  out << "(ms unless noted; itl_set/ttft_set are the server's true spacing; read_us is the client's\n"
         " wall time per socket read: a timestamp of another stream is late by about that much;\n"
         " cpu_us is the client thread's CPU time per content chunk, independent of other load)\n";
}

SendScheduleRow calibrate_send_schedule(double rate, int64_t requests) {
  FakeOpenAiServer server([](const std::string&, const nlohmann::json&) {
    FakeResponse r;
    r.n_tokens = 1;
    return r;
  });
  LoadOptions options;
  options.target = parse_http_url(server.url());
  options.path = endpoint_path(EndpointKind::kCompletions);
  options.timeout_s = 120.0;
  GenerationOptions gen;
  gen.model = "fake-model";
  const std::string body = build_request_body(BenchRequest{"the of and to in", 5, 1}, gen);
  const std::vector<double> offsets = arrival_offsets(requests, rate, 1.0, 123);
  std::vector<LoadRequest> load;
  for (double at : offsets) load.push_back(LoadRequest{body, 5, at});
  const LoadResult result = run_load(load, options);
  SendScheduleRow row;
  row.rate = rate;
  row.requests = requests;
  std::vector<double> late, gap_error;
  for (const RequestRecord& r : result.records) late.push_back((r.sent_s - r.scheduled_s) * 1e3);
  const std::vector<double> received = server.receipt_times();
  for (size_t i = 1; i < received.size() && i < offsets.size(); ++i)
    gap_error.push_back(std::abs((received[i] - received[i - 1]) - (offsets[i] - offsets[i - 1])) * 1e3);
  row.lateness_ms = summarize(late);
  row.gap_error_ms = summarize(gap_error);
  return row;
}

void print_send_schedule(std::ostream& out, const SendScheduleRow& row) {
  char buf[300];
  std::snprintf(buf, sizeof buf,
                "Send schedule: %lld requests at %.0f req/s (Poisson): lateness p50 %.3f ms, p99 %.3f ms, "
                "max %.3f ms; |server gap - scheduled gap| p50 %.3f ms, p99 %.3f ms\n",
                static_cast<long long>(row.requests), row.rate, row.lateness_ms.median, row.lateness_ms.p99,
                row.lateness_ms.max, row.gap_error_ms.median, row.gap_error_ms.p99);
  out << buf;
}

}  // namespace strata::bench
