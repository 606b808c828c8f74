// The results of `strata bench serve` as a table (stdout) and as JSON (--json FILE).
//
// JSON contract (other tools read it): a single run is one object with at least `completed`,
// `failed`, `duration_s`, `request_throughput`, `input_throughput`, `output_throughput` and
// `ttft_ms`, `tpot_ms`, `itl_ms`, `e2e_ms` — each {"mean", "median", "p90", "p99", ...}, null
// when there is no value — plus `goodput` (requests/s) when an SLO is given. A sweep is
// {"sweep": [one such object per level, with "max_concurrency"], ...}.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "bench/bench_serve.h"

namespace strata::bench {

// Run-independent settings echoed into the report.
nlohmann::json options_json(const BenchServeOptions& options);

// One run: the contract keys and the extras (errors, token sources, client overhead, ...).
// With `detailed`, also every request ("requests": [...]).
nlohmann::json run_json(const BenchRun& run, const BenchServeOptions& options, bool detailed);

// The whole result: run_json of the single run, or {"sweep": [...]} for a sweep; both with
// "model", "url" and "config".
nlohmann::json result_json(const BenchServeResult& result, const BenchServeOptions& options, bool detailed);

// Human-readable report of one run.
void print_run_report(std::ostream& out, const BenchRun& run, const BenchServeResult& result,
                      const BenchServeOptions& options);
// One row per concurrency level.
void print_sweep_table(std::ostream& out, const BenchServeResult& result, const BenchServeOptions& options);

}  // namespace strata::bench
