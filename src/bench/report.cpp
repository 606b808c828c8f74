#include "bench/report.h"

#include <cmath>
#include <cstdio>

namespace strata::bench {
namespace {

using json = nlohmann::json;

json number_or_null(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

json distribution_json(const Distribution& d) {
  return {{"mean", number_or_null(d.mean)},
          {"median", number_or_null(d.median)},
          {"p90", number_or_null(d.p90)},
          {"p99", number_or_null(d.p99)},
          {"min", number_or_null(d.min)},
          {"max", number_or_null(d.max)},
          {"count", d.count}};
}

// Where token counts came from: every request's usage, none, or some.
const char* source_name(int64_t from_usage, int64_t completed, const char* otherwise) {
  if (completed == 0) return "none";
  if (from_usage == completed) return "server_usage";
  return from_usage == 0 ? otherwise : "mixed";
}

json rate_json(double rate) {
  return std::isinf(rate) ? json("inf") : json(rate);
}

std::string fmt(const char* format, double v) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

void line(std::ostream& out, const std::string& label, const std::string& value) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-40s %s\n", label.c_str(), value.c_str());
  out << buf;
}

std::string token_source_note(int64_t from_usage, int64_t completed, bool input) {
  const std::string src = source_name(from_usage, completed, input ? "estimated" : "counted_chunks");
  if (src == "server_usage") return "(from server usage)";
  if (src == "estimated") return "(estimated: server reported no usage)";
  if (src == "counted_chunks") return "(counted: one per content chunk, no usage)";
  if (src == "mixed")
    return "(server usage for " + std::to_string(from_usage) + " of " + std::to_string(completed) + ")";
  return "";
}

std::string slo_text(const SloOptions& slo) {
  std::string s;
  auto add = [&](const char* name, const std::optional<double>& v) {
    if (!v) return;
    if (!s.empty()) s += ", ";
    s += std::string(name) + " <= " + fmt("%g", *v) + " ms";
  };
  add("TTFT", slo.ttft_ms);
  add("TPOT", slo.tpot_ms);
  add("E2E", slo.e2e_ms);
  return s;
}

json request_json(const RequestRecord& r) {
  json j = {{"success", r.success},
            {"scheduled_s", r.scheduled_s},
            {"sent_s", r.sent_s},
            {"input_tokens", r.input_tokens},
            {"output_tokens", r.output_tokens},
            {"content_chunks", r.content_chunks}};
  if (r.success) {
    j["ttft_ms"] = r.ttft_s * 1e3;
    j["e2e_ms"] = r.e2e_s * 1e3;
    json itl = json::array();
    for (double g : r.itl_s) itl.push_back(g * 1e3);
    j["itl_ms"] = std::move(itl);
  } else {
    j["error_class"] = r.error_class;
    j["error"] = r.error_message;
  }
  return j;
}

}  // namespace

json options_json(const BenchServeOptions& o) {
  json j = {{"endpoint", o.endpoint == EndpointKind::kChat ? "chat" : "completions"},
            {"request_rate", rate_json(o.request_rate)},
            {"burstiness", o.burstiness},
            {"seed", o.seed},
            {"ignore_eos", o.ignore_eos},
            {"temperature", o.temperature},
            {"timeout_s", o.timeout_s}};
  if (!o.extra_body.empty()) j["extra_body"] = json::parse(o.extra_body);
  if (o.dataset.empty()) {
    j["workload"] = o.prefix_len > 0 ? "shared_prefix" : "synthetic";
    j["input_len"] = o.input_len;
    j["output_len"] = o.output_len;
    j["range_ratio"] = o.range_ratio;
    j["prefix_len"] = o.prefix_len;
  } else {
    j["workload"] = "jsonl";
    j["dataset"] = o.dataset;
  }
  json slo = json::object();
  if (o.slo.ttft_ms) slo["ttft_ms"] = *o.slo.ttft_ms;
  if (o.slo.tpot_ms) slo["tpot_ms"] = *o.slo.tpot_ms;
  if (o.slo.e2e_ms) slo["e2e_ms"] = *o.slo.e2e_ms;
  if (!slo.empty()) j["slo"] = slo;
  return j;
}

json run_json(const BenchRun& run, const BenchServeOptions& options, bool detailed) {
  const BenchMetrics& m = run.metrics;
  json j = {{"completed", m.completed},
            {"failed", m.failed},
            {"errors", m.errors},
            {"duration_s", m.duration_s},
            {"request_throughput", m.request_throughput},
            {"input_throughput", m.input_throughput},
            {"output_throughput", m.output_throughput},
            {"total_token_throughput", m.total_token_throughput},
            {"total_input_tokens", m.total_input_tokens},
            {"total_output_tokens", m.total_output_tokens},
            {"input_tokens_source", source_name(m.input_tokens_from_usage, m.completed, "estimated")},
            {"output_tokens_source", source_name(m.output_tokens_from_usage, m.completed, "counted_chunks")},
            {"ttft_ms", distribution_json(m.ttft_ms)},
            {"tpot_ms", distribution_json(m.tpot_ms)},
            {"itl_ms", distribution_json(m.itl_ms)},
            {"e2e_ms", distribution_json(m.e2e_ms)},
            {"max_concurrency", run.max_concurrency > 0 ? json(run.max_concurrency) : json(nullptr)},
            {"request_rate", rate_json(options.request_rate)},
            {"num_requests", run.load.records.size()},
            {"peak_in_flight", run.load.peak_in_flight},
            {"client_overhead_us",
             {{"mean", run.load.overhead.mean_us},
              {"p99", run.load.overhead.p99_us},
              {"max", run.load.overhead.max_us},
              {"reads", run.load.overhead.reads},
              {"cpu_s", run.load.overhead.cpu_s}}}};
  if (m.goodput) {
    j["goodput"] = *m.goodput;
    j["good_requests"] = m.good_requests;
  }
  if (m.spec_requests > 0)
    j["spec"] = {{"requests", m.spec_requests},
                 {"draft_tokens", m.draft_tokens},
                 {"accepted_tokens", m.accepted_draft_tokens},
                 {"acceptance_rate", m.draft_tokens > 0 ? json(static_cast<double>(m.accepted_draft_tokens) /
                                                               static_cast<double>(m.draft_tokens))
                                                        : json(nullptr)}};
  if (detailed) {
    json reqs = json::array();
    for (const RequestRecord& r : run.load.records) reqs.push_back(request_json(r));
    j["requests"] = std::move(reqs);
  }
  return j;
}

json result_json(const BenchServeResult& result, const BenchServeOptions& options, bool detailed) {
  json j;
  if (options.sweep_concurrency.empty() && result.runs.size() == 1) {
    j = run_json(result.runs.front(), options, detailed);
  } else {
    json sweep = json::array();
    for (const BenchRun& run : result.runs) sweep.push_back(run_json(run, options, detailed));
    j["sweep"] = std::move(sweep);
  }
  j["model"] = result.model;
  j["url"] = result.request_url;
  j["config"] = options_json(options);
  return j;
}

void print_run_report(std::ostream& out, const BenchRun& run, const BenchServeResult& result,
                      const BenchServeOptions& options) {
  const BenchMetrics& m = run.metrics;
  out << "============ Serving Benchmark Result ============\n";
  line(out, "Endpoint:", result.request_url);
  line(out, "Model:", result.model);
  line(out,
       "Request rate (req/s):", std::isinf(options.request_rate) ? "inf" : fmt("%g", options.request_rate));
  line(out, "Max concurrency:", run.max_concurrency > 0 ? std::to_string(run.max_concurrency) : "unlimited");
  line(out, "Successful requests:", std::to_string(m.completed));
  line(out, "Failed requests:", std::to_string(m.failed));
  for (const auto& [cls, n] : m.errors) line(out, "  " + cls + ":", std::to_string(n));
  line(out, "Benchmark duration (s):", fmt("%.3f", m.duration_s));
  line(out, "Total input tokens:",
       std::to_string(m.total_input_tokens) + " " +
           token_source_note(m.input_tokens_from_usage, m.completed, true));
  line(out, "Total generated tokens:",
       std::to_string(m.total_output_tokens) + " " +
           token_source_note(m.output_tokens_from_usage, m.completed, false));
  line(out, "Request throughput (req/s):", fmt("%.3f", m.request_throughput));
  line(out, "Input token throughput (tok/s):", fmt("%.2f", m.input_throughput));
  line(out, "Output token throughput (tok/s):", fmt("%.2f", m.output_throughput));
  line(out, "Total token throughput (tok/s):", fmt("%.2f", m.total_token_throughput));
  if (m.goodput) {
    line(out, "Goodput (req/s):",
         fmt("%.3f", *m.goodput) + "  (" + std::to_string(m.good_requests) + " requests meet " +
             slo_text(options.slo) + ")");
  }
  if (m.spec_requests > 0 && m.draft_tokens > 0)
    line(out, "Draft acceptance rate:",
         fmt("%.3f", static_cast<double>(m.accepted_draft_tokens) / static_cast<double>(m.draft_tokens)) +
             "  (" + std::to_string(m.accepted_draft_tokens) + " of " + std::to_string(m.draft_tokens) +
             " drafted)");
  out << "------------------ Latency (ms) ------------------\n";
  char buf[160];
  std::snprintf(buf, sizeof buf, "%-6s %10s %10s %10s %10s %8s\n", "", "mean", "median", "p90", "p99", "n");
  out << buf;
  for (const auto& [name, d] : {std::pair{"TTFT", &m.ttft_ms}, std::pair{"TPOT", &m.tpot_ms},
                                std::pair{"ITL", &m.itl_ms}, std::pair{"E2E", &m.e2e_ms}}) {
    std::snprintf(buf, sizeof buf, "%-6s %10s %10s %10s %10s %8zu\n", name, fmt("%.2f", d->mean).c_str(),
                  fmt("%.2f", d->median).c_str(), fmt("%.2f", d->p90).c_str(), fmt("%.2f", d->p99).c_str(),
                  d->count);
    out << buf;
  }
  out << "--------------------------------------------------\n";
  const ClientOverhead& o = run.load.overhead;
  int64_t chunks = 0;
  for (const RequestRecord& r : run.load.records) chunks += r.content_chunks;
  out << "Client overhead per read (us): mean " << fmt("%.1f", o.mean_us) << ", p99 " << fmt("%.1f", o.p99_us)
      << ", max " << fmt("%.1f", o.max_us) << " over " << o.reads << " reads\n";
  out << "Client CPU time: " << fmt("%.3f", o.cpu_s) << " s";
  if (chunks > 0)
    out << ", " << fmt("%.2f", o.cpu_s * 1e6 / static_cast<double>(chunks)) << " us per content chunk";
  out << "\n";
  out << "==================================================\n";
}

void print_sweep_table(std::ostream& out, const BenchServeResult& result, const BenchServeOptions& options) {
  out << "Concurrency sweep: " << result.request_url << "  model " << result.model << "  request rate "
      << (std::isinf(options.request_rate) ? std::string("inf") : fmt("%g", options.request_rate)) << "\n";
  char buf[400];
  std::snprintf(buf, sizeof buf, "%6s %6s %5s %8s %8s %9s %9s %9s %9s %9s %9s %9s %9s %8s\n", "conc", "ok",
                "fail", "dur_s", "req/s", "out_tok/s", "ttft_p50", "ttft_p90", "ttft_p99", "tpot_p50",
                "itl_p50", "itl_p90", "itl_p99", "goodput");
  out << buf;
  for (const BenchRun& run : result.runs) {
    const BenchMetrics& m = run.metrics;
    std::snprintf(buf, sizeof buf, "%6lld %6lld %5lld %8.2f %8.2f %9.1f %9s %9s %9s %9s %9s %9s %9s %8s\n",
                  static_cast<long long>(run.max_concurrency), static_cast<long long>(m.completed),
                  static_cast<long long>(m.failed), m.duration_s, m.request_throughput, m.output_throughput,
                  fmt("%.2f", m.ttft_ms.median).c_str(), fmt("%.2f", m.ttft_ms.p90).c_str(),
                  fmt("%.2f", m.ttft_ms.p99).c_str(), fmt("%.2f", m.tpot_ms.median).c_str(),
                  fmt("%.2f", m.itl_ms.median).c_str(), fmt("%.2f", m.itl_ms.p90).c_str(),
                  fmt("%.2f", m.itl_ms.p99).c_str(), m.goodput ? fmt("%.3f", *m.goodput).c_str() : "-");
    out << buf;
  }
  out << "(latencies in ms; TPOT request-weighted, ITL token-weighted)\n";
}

}  // namespace strata::bench
