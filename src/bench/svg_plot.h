// A hand-written SVG chart of a concurrency sweep (--plot FILE.svg): four panels against the
// concurrency level — token throughput, request throughput and goodput, TTFT percentiles and
// ITL percentiles. Plain SVG 1.1 (no scripts, no external resources), viewable in any browser.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_serve.h"

namespace strata::bench {

// Series colors, in legend order within a panel (the tests look for them in a rendering).
inline constexpr const char* kPlotColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c"};

// The SVG document for the runs of a sweep (max_concurrency > 0 each, at least one run).
std::string render_sweep_svg(const BenchServeResult& result);

// Escapes &, <, >, " and ' for XML text and attributes.
std::string xml_escape(const std::string& text);

}  // namespace strata::bench
