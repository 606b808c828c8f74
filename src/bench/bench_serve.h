// `strata bench serve`: drives an OpenAI-compatible server with a workload and measures it.
//
// Builds the workload (synthetic, shared-prefix or JSONL), the arrival schedule (Poisson with
// optional burstiness), runs it once or once per --sweep-concurrency level through the
// event-loop client, and computes the metrics (see metrics.h and openai_stream.h for the exact
// definitions). Printing and plotting live in report.h and svg_plot.h.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "bench/metrics.h"
#include "bench/openai_stream.h"
#include "bench/stream_client.h"
#include "bench/workload.h"

namespace strata::bench {

struct BenchServeOptions {
  std::string url;  // http://HOST:PORT
  EndpointKind endpoint = EndpointKind::kCompletions;
  std::string model;          // empty: the first model listed by GET /v1/models
  int64_t num_prompts = 100;  // for a dataset, 0 = every line
  double request_rate = std::numeric_limits<double>::infinity();
  double burstiness = 1.0;
  int64_t max_concurrency = 0;  // 0 = unlimited
  uint64_t seed = 0;
  int64_t input_len = 128, output_len = 128, prefix_len = 0;
  double range_ratio = 0.0;
  std::string dataset;  // JSONL file; empty = synthetic
  bool ignore_eos = false;
  double temperature = 0.0;
  std::string extra_body;  // JSON object merged into every request body
  std::string api_key;
  double timeout_s = 600.0;
  SloOptions slo;
  std::vector<int64_t> sweep_concurrency;  // empty = a single run at max_concurrency
  bool progress = false;
};

struct BenchRun {
  int64_t max_concurrency = 0;  // 0 = unlimited
  LoadResult load;
  BenchMetrics metrics;
};

struct BenchServeResult {
  std::string model;
  std::string request_url;  // full URL of the endpoint
  std::vector<BenchRequest> workload;
  std::vector<BenchRun> runs;  // one per concurrency level
};

// Throws strata::Error for invalid options or an unreachable model list; a failing server
// during the run shows up as failed requests, not as an exception.
BenchServeResult run_bench_serve(const BenchServeOptions& options);

// Parses "1,4,16,64" (positive integers); throws strata::Error otherwise.
std::vector<int64_t> parse_concurrency_list(const std::string& text);
// Parses a rate: a positive number or "inf".
double parse_request_rate(const std::string& text);

// The first model id of GET {url}/v1/models.
std::string discover_model(const HttpTarget& target, const std::string& api_key);

}  // namespace strata::bench
