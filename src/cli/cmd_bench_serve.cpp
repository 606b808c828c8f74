// `strata bench serve`: the serving load generator for any OpenAI-compatible server.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>

#include "bench/bench_serve.h"
#include "bench/client_calibration.h"
#include "bench/progress_bar.h"
#include "bench/report.h"
#include "bench/svg_plot.h"
#include "cli/command.h"
#include "core/check.h"

namespace strata::cli {
namespace {

constexpr const char* kDefinitions =
    R"(Metrics (all latencies from the moment the request's connection is opened):
  content chunk  a streamed event carrying non-empty text (completions: choices[].text; chat:
                 choices[].delta.content); role-only, finish and usage chunks are not tokens.
  TTFT   time to the first content chunk.
  E2E    time to the last content chunk.
  TPOT   (E2E - TTFT) / (output_tokens - 1) per request with more than one output token;
         percentiles over requests (request-weighted).
  ITL    every gap between consecutive content chunks of every request, pooled
         (token-weighted).
  output tokens  usage.completion_tokens when the server reports it (stream_options.
                 include_usage), else one per content chunk; input tokens likewise from
                 usage.prompt_tokens, else estimated (synthetic prompts: one token per word;
                 JSONL: max(words, bytes/4)). The report says which.
  throughput  successful requests, input and output tokens divided by the duration (first
              send to last completion). goodput: successful requests meeting every --slo-*
              given, per second (TPOT counts as 0 for one-token outputs).
  percentiles  linear interpolation between closest ranks (numpy's default).
  A request fails as connect_error, http_<status>, timeout, malformed_stream (bad HTTP, SSE
  or JSON, or no "data: [DONE]"), stream_error (an error event) or empty_output.
Arrivals: request i is sent at the sum of i gaps drawn from Gamma(shape = burstiness,
mean = 1/rate) (burstiness 1: Poisson); --max-concurrency then caps requests in flight.
Workloads: synthetic prompts are random common words, each one token in common vocabularies;
--prefix-len adds that many words shared by every prompt; --dataset reads JSONL lines
{"prompt": "...", "output_len": N}.)";

struct ServeArgs {
  bench::BenchServeOptions options;
  std::string endpoint = "completions";
  std::string request_rate = "inf";
  std::string sweep;
  std::string json_path, plot_path;
  double slo_ttft = 0, slo_tpot = 0, slo_e2e = 0;
  bool detailed = false, quiet = false, calibrate = false;
};

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out || !(out << text) || !out.flush()) STRATA_THROW("cannot write ", path);
}

void run_calibration(const ServeArgs& args) {
  std::vector<int64_t> levels{1, 8, 32};
  if (!args.sweep.empty()) levels = bench::parse_concurrency_list(args.sweep);
  const auto rows = bench::calibrate_client(levels, 200);
  bench::print_calibration(std::cout, rows);
  bench::print_send_schedule(std::cout, bench::calibrate_send_schedule(100.0, 200));
}

void run_serve(ServeArgs& args, CLI::App& cmd) {
  if (args.calibrate) return run_calibration(args);
  bench::BenchServeOptions& o = args.options;
  o.endpoint = bench::parse_endpoint_kind(args.endpoint);
  o.request_rate = bench::parse_request_rate(args.request_rate);
  if (cmd.count("--slo-ttft")) o.slo.ttft_ms = args.slo_ttft;
  if (cmd.count("--slo-tpot")) o.slo.tpot_ms = args.slo_tpot;
  if (cmd.count("--slo-e2e")) o.slo.e2e_ms = args.slo_e2e;
  if (!args.sweep.empty()) {
    if (cmd.count("--max-concurrency")) STRATA_THROW("use either --max-concurrency or --sweep-concurrency");
    o.sweep_concurrency = bench::parse_concurrency_list(args.sweep);
  }
  if (!args.plot_path.empty() && o.sweep_concurrency.empty())
    STRATA_THROW("--plot needs --sweep-concurrency");
  if (o.api_key.empty())
    if (const char* key = std::getenv("OPENAI_API_KEY")) o.api_key = key;
  o.progress = !args.quiet && bench::stderr_is_tty();

  const bench::BenchServeResult result = bench::run_bench_serve(o);
  if (o.sweep_concurrency.empty()) {
    bench::print_run_report(std::cout, result.runs.front(), result, o);
  } else {
    bench::print_sweep_table(std::cout, result, o);
  }
  std::cout.flush();
  if (!args.json_path.empty())
    write_file(args.json_path, bench::result_json(result, o, args.detailed).dump(2) + "\n");
  if (!args.plot_path.empty()) write_file(args.plot_path, bench::render_sweep_svg(result));
  int64_t completed = 0;
  for (const auto& run : result.runs) completed += run.metrics.completed;
  if (completed == 0) set_exit_code(1);  // nothing succeeded: let scripts notice
}

void setup_serve(CLI::App& cmd) {
  auto args = std::make_shared<ServeArgs>();
  bench::BenchServeOptions& o = args->options;
  cmd.footer(kDefinitions);
  cmd.add_option("--url", o.url, "Server base URL, http://HOST:PORT (a path prefix is kept)");
  cmd.add_option("--endpoint", args->endpoint, "completions (/v1/completions) or chat (/v1/chat/completions)")
      ->capture_default_str();
  cmd.add_option("--model", o.model, "Model name sent in requests (default: first of GET /v1/models)");
  cmd.add_option("--num-prompts", o.num_prompts, "Requests to send (with --dataset, 0 = every line)")
      ->capture_default_str();
  cmd.add_option("--request-rate", args->request_rate,
                 "Mean arrival rate in requests/s, or inf (all at once)")
      ->capture_default_str();
  cmd.add_option("--burstiness", o.burstiness, "Gamma shape of the inter-arrival gaps (1 = Poisson)")
      ->capture_default_str();
  cmd.add_option("--max-concurrency", o.max_concurrency, "Requests in flight at most (0 = unlimited)")
      ->capture_default_str();
  cmd.add_option("--seed", o.seed, "Seed of prompts and arrival times")->capture_default_str();
  cmd.add_option("--input-len", o.input_len, "Synthetic prompt length in tokens (words)")
      ->capture_default_str();
  cmd.add_option("--output-len", o.output_len, "Output tokens asked for (max_tokens)")->capture_default_str();
  cmd.add_option("--range-ratio", o.range_ratio, "Lengths drawn uniformly from [L(1-r), L(1+r)], 0 <= r < 1")
      ->capture_default_str();
  cmd.add_option("--prefix-len", o.prefix_len,
                 "Words shared by every prompt, before the input-len unique words")
      ->capture_default_str();
  cmd.add_option("--dataset", o.dataset, "JSONL file of {\"prompt\": ..., \"output_len\": N} lines");
  cmd.add_flag("--ignore-eos", o.ignore_eos, "Send ignore_eos: true so every output has --output-len tokens");
  cmd.add_option("--temperature", o.temperature, "Sampling temperature sent")->capture_default_str();
  cmd.add_option("--extra-body", o.extra_body,
                 "JSON object merged into every request body, e.g. '{\"response_format\": {...}}'");
  cmd.add_option("--api-key", o.api_key, "Bearer token (default: $OPENAI_API_KEY)");
  cmd.add_option("--timeout", o.timeout_s, "Seconds one request may take before it fails as timeout")
      ->capture_default_str();
  cmd.add_option("--slo-ttft", args->slo_ttft, "Goodput SLO: TTFT at most this many ms");
  cmd.add_option("--slo-tpot", args->slo_tpot, "Goodput SLO: TPOT at most this many ms");
  cmd.add_option("--slo-e2e", args->slo_e2e, "Goodput SLO: E2E latency at most this many ms");
  cmd.add_option("--sweep-concurrency", args->sweep, "Run once per max concurrency, e.g. 1,4,16,64");
  cmd.add_option("--plot", args->plot_path, "With a sweep: write an SVG chart of throughput and latencies");
  cmd.add_option("--json", args->json_path, "Write the results as JSON to this file");
  cmd.add_flag("--detailed", args->detailed, "Include every request's record in --json");
  cmd.add_flag("--quiet,-q", args->quiet, "No progress bar");
  cmd.add_flag("--calibrate", args->calibrate,
               "Measure this client's own timing error and overhead against a built-in fake server "
               "(levels from --sweep-concurrency, default 1,8,32)");
  cmd.callback([args, &cmd] { run_serve(*args, cmd); });
}

}  // namespace

STRATA_REGISTER_COMMAND("bench", "serve", setup_serve,
                        "Load-test an OpenAI-compatible server: TTFT, TPOT, ITL, E2E, throughput, goodput");

}  // namespace strata::cli
