#include "bench/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/check.h"

namespace strata::bench {

double percentile_sorted(const std::vector<double>& sorted, double p) {
  STRATA_CHECK(!sorted.empty(), "percentile of an empty list");
  STRATA_CHECK(p >= 0.0 && p <= 100.0, "percentile out of range");
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

Distribution summarize(std::vector<double> values) {
  Distribution d;
  d.count = values.size();
  if (values.empty()) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    d.mean = d.median = d.p90 = d.p99 = d.min = d.max = nan;
    return d;
  }
  std::sort(values.begin(), values.end());
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  d.median = percentile_sorted(values, 50.0);
  d.p90 = percentile_sorted(values, 90.0);
  d.p99 = percentile_sorted(values, 99.0);
  d.min = values.front();
  d.max = values.back();
  return d;
}

std::optional<double> request_tpot_s(const RequestRecord& r) {
  if (!r.success || r.output_tokens <= 1) return std::nullopt;
  return (r.e2e_s - r.ttft_s) / static_cast<double>(r.output_tokens - 1);
}

namespace {

bool meets_slo(const RequestRecord& r, const SloOptions& slo) {
  if (slo.ttft_ms && r.ttft_s * 1e3 > *slo.ttft_ms) return false;
  if (slo.tpot_ms && request_tpot_s(r).value_or(0.0) * 1e3 > *slo.tpot_ms) return false;
  if (slo.e2e_ms && r.e2e_s * 1e3 > *slo.e2e_ms) return false;
  return true;
}

}  // namespace

BenchMetrics compute_metrics(const std::vector<RequestRecord>& records, double duration_s,
                             const SloOptions& slo) {
  BenchMetrics m;
  m.duration_s = duration_s;
  std::vector<double> ttft, tpot, itl, e2e;
  for (const RequestRecord& r : records) {
    if (!r.success) {
      ++m.failed;
      ++m.errors[r.error_class];
      continue;
    }
    ++m.completed;
    m.total_input_tokens += r.input_tokens;
    m.total_output_tokens += r.output_tokens;
    m.input_tokens_from_usage += r.input_tokens_from_usage ? 1 : 0;
    m.output_tokens_from_usage += r.output_tokens_from_usage ? 1 : 0;
    ttft.push_back(r.ttft_s * 1e3);
    e2e.push_back(r.e2e_s * 1e3);
    if (auto t = request_tpot_s(r)) tpot.push_back(*t * 1e3);
    for (double gap : r.itl_s) itl.push_back(gap * 1e3);
    if (slo.any() && meets_slo(r, slo)) ++m.good_requests;
    if (r.draft_tokens >= 0) {
      ++m.spec_requests;
      m.draft_tokens += r.draft_tokens;
      m.accepted_draft_tokens += std::max<int64_t>(r.accepted_draft_tokens, 0);
    }
  }
  if (duration_s > 0.0) {
    m.request_throughput = static_cast<double>(m.completed) / duration_s;
    m.input_throughput = static_cast<double>(m.total_input_tokens) / duration_s;
    m.output_throughput = static_cast<double>(m.total_output_tokens) / duration_s;
    m.total_token_throughput = m.input_throughput + m.output_throughput;
  }
  m.ttft_ms = summarize(std::move(ttft));
  m.tpot_ms = summarize(std::move(tpot));
  m.itl_ms = summarize(std::move(itl));
  m.e2e_ms = summarize(std::move(e2e));
  if (slo.any()) m.goodput = duration_s > 0.0 ? static_cast<double>(m.good_requests) / duration_s : 0.0;
  return m;
}

}  // namespace strata::bench
