// Benchmark metrics from the per-request records, as the seeds define them and, where they are
// silent, as vLLM's benchmark_serving computes them.
//
//   TTFT   time to first token: connection opened -> first content chunk, per successful request.
//   TPOT   time per output token excluding the first: (E2E - TTFT) / (output_tokens - 1), one
//          value per successful request with output_tokens > 1 (request-weighted).
//   ITL    inter-token latency: every gap between consecutive content chunks of every
//          successful request, pooled (token-weighted: long outputs weigh more).
//   E2E    end-to-end latency: connection opened -> last content chunk.
//   duration            start of the run (first send) -> end of the last request.
//   request throughput  successful requests / duration; input/output token throughput: the
//                       input/output tokens of successful requests / duration.
//   goodput             successful requests meeting every SLO given / duration, where a request
//                       meets --slo-ttft if TTFT <= it, --slo-tpot if TPOT <= it (TPOT is 0 for
//                       one-token outputs), --slo-e2e if E2E <= it.
//   speculation         draft and accepted-draft tokens summed over the requests whose server
//                       reports `timings.draft_n`; acceptance rate = accepted / drafted.
//   percentiles         linear interpolation between closest ranks (numpy's default): the p-th
//                       percentile of sorted x[0..n-1] is x[k] + f * (x[k+1] - x[k]) with
//                       k + f = p / 100 * (n - 1).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/request_record.h"

namespace strata::bench {

// p in [0, 100] of an ascending-sorted, non-empty list.
double percentile_sorted(const std::vector<double>& sorted, double p);

struct Distribution {
  size_t count = 0;
  // NaN when count == 0 (reported as null in JSON, "-" in tables).
  double mean, median, p90, p99, min, max;
};
// Summary of `values` (any order).
Distribution summarize(std::vector<double> values);

struct SloOptions {
  std::optional<double> ttft_ms, tpot_ms, e2e_ms;
  bool any() const { return ttft_ms || tpot_ms || e2e_ms; }
};

struct BenchMetrics {
  int64_t completed = 0, failed = 0;
  std::map<std::string, int64_t> errors;  // error class -> count
  double duration_s = 0.0;
  int64_t total_input_tokens = 0, total_output_tokens = 0;
  int64_t input_tokens_from_usage = 0;   // successful requests whose input count came from usage
  int64_t output_tokens_from_usage = 0;  // same for output
  double request_throughput = 0.0, input_throughput = 0.0, output_throughput = 0.0;
  double total_token_throughput = 0.0;
  Distribution ttft_ms, tpot_ms, itl_ms, e2e_ms;
  std::optional<double> goodput;  // requests/s, only when an SLO is given
  int64_t good_requests = 0;
  // Speculative decoding over the successful requests that report it (0 when none does).
  int64_t spec_requests = 0, draft_tokens = 0, accepted_draft_tokens = 0;
};

// The TPOT of one successful request in seconds, or nullopt when output_tokens <= 1.
std::optional<double> request_tpot_s(const RequestRecord& r);

BenchMetrics compute_metrics(const std::vector<RequestRecord>& records, double duration_s,
                             const SloOptions& slo);

}  // namespace strata::bench
