#include "engine/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace strata {
namespace {

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void header(std::string& out, const std::string& name, const std::string& help, const char* type) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

Histogram::Histogram(std::string name, std::string help, std::vector<double> bounds)
    : name_(std::move(name)),
      help_(std::move(help)),
      bounds_(std::move(bounds)),
      counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[i];
  sum_ += v;
  ++count_;
}

void Histogram::render(std::string& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  header(out, name_, help_, "histogram");
  uint64_t cum = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cum += counts_[i];
    const std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    out += name_ + "_bucket{le=\"" + le + "\"} " + std::to_string(cum) + "\n";
  }
  out += name_ + "_sum " + number(sum_) + "\n";
  out += name_ + "_count " + std::to_string(count_) + "\n";
}

void Counter::add(double v) {
  double cur = value_.load();
  while (!value_.compare_exchange_weak(cur, cur + v)) {
  }
}

void Counter::render(std::string& out) const {
  header(out, name_, help_, "counter");
  out += name_ + " " + number(value_.load()) + "\n";
}

void Gauge::render(std::string& out) const {
  header(out, name_, help_, "gauge");
  out += name_ + " " + number(value_.load()) + "\n";
}

PositionCounter::PositionCounter(std::string name, std::string help, int n_positions)
    : name_(std::move(name)), help_(std::move(help)), values_(static_cast<size_t>(n_positions)) {
  for (auto& v : values_) v.store(0.0);
}

void PositionCounter::add(int position, double v) {
  auto& slot =
      values_[static_cast<size_t>(std::clamp<int>(position, 0, static_cast<int>(values_.size()) - 1))];
  double cur = slot.load();
  while (!slot.compare_exchange_weak(cur, cur + v)) {
  }
}

double PositionCounter::value(int position) const {
  return values_[static_cast<size_t>(position)].load();
}

void PositionCounter::render(std::string& out) const {
  header(out, name_, help_, "counter");
  for (size_t i = 0; i < values_.size(); ++i)
    out += name_ + "{position=\"" + std::to_string(i) + "\"} " + number(values_[i].load()) + "\n";
}

std::string EngineMetrics::render() const {
  std::string out;
  for (const Histogram* h :
       {&time_to_first_token, &inter_token_latency, &e2e_request_latency, &request_queue_time})
    h->render(out);
  for (const Gauge* g : {&num_requests_running, &num_requests_waiting, &kv_cache_usage, &kv_cache_waste,
                         &kv_blocks_free, &kv_block_bytes, &kv_total_bytes, &kv_used_bytes})
    g->render(out);
  for (const Counter* c : {&prompt_tokens, &generation_tokens, &preemptions, &prefix_cache_queries,
                           &prefix_cache_hits, &requests_finished, &requests_aborted, &spec_num_drafts,
                           &spec_num_draft_tokens, &spec_num_accepted_tokens, &spec_draft_catch_up_tokens,
                           &spec_probes, &kv_evicted_tokens, &kv_evictions_skipped})
    c->render(out);
  spec_num_accepted_per_pos.render(out);
  for (const Tier* t : {&offload_host, &offload_disk}) {
    for (const Counter* c :
         {&t->hits, &t->read_bytes, &t->written_bytes, &t->read_seconds, &t->write_seconds})
      c->render(out);
    t->stored_bytes.render(out);
  }
  offload_rejected.render(out);
  offload_dropped.render(out);
  return out;
}

}  // namespace strata
