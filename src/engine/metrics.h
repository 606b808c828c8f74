// Prometheus-style metrics recorded by the engine and rendered by the server's /metrics.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace strata {

class Histogram {
 public:
  Histogram(std::string name, std::string help, std::vector<double> bounds);
  void observe(double v);
  void render(std::string& out) const;

 private:
  std::string name_, help_;
  std::vector<double> bounds_;  // upper bounds, increasing (+Inf implied)
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative)
  double sum_ = 0.0;
  uint64_t count_ = 0;
};

class Counter {
 public:
  Counter(std::string name, std::string help) : name_(std::move(name)), help_(std::move(help)) {}
  void add(double v = 1.0);
  double value() const { return value_.load(); }
  void render(std::string& out) const;

 private:
  std::string name_, help_;
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  Gauge(std::string name, std::string help) : name_(std::move(name)), help_(std::move(help)) {}
  void set(double v) { value_.store(v); }
  double value() const { return value_.load(); }
  void render(std::string& out) const;

 private:
  std::string name_, help_;
  std::atomic<double> value_{0.0};
};

// A counter per position 0..n-1 (label "position"), e.g. accepted drafts by their place in the draft.
class PositionCounter {
 public:
  PositionCounter(std::string name, std::string help, int n_positions);
  void add(int position, double v = 1.0);  // positions >= n are counted in the last one
  double value(int position) const;
  void render(std::string& out) const;

 private:
  std::string name_, help_;
  std::vector<std::atomic<double>> values_;
};

// Every metric of the engine, named after vLLM's where one exists (prefix "strata:").
struct EngineMetrics {
  Histogram time_to_first_token{"strata:time_to_first_token_seconds",
                                "Time from arrival to the first token.",
                                {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                                 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}};
  Histogram inter_token_latency{"strata:inter_token_latency_seconds",
                                "Time between consecutive output tokens.",
                                {0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05,
                                 0.075, 0.1,    0.15,  0.2,  0.3,   0.4,  0.5,   0.75, 1.0,  2.5}};
  Histogram e2e_request_latency{"strata:e2e_request_latency_seconds",
                                "Time from arrival to the last token.",
                                {0.01, 0.05, 0.1, 0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
                                 30.0, 40.0, 50.0, 60.0, 120.0}};
  Histogram request_queue_time{
      "strata:request_queue_time_seconds",
      "Time from arrival to first scheduling.",
      {0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0}};
  Gauge num_requests_running{"strata:num_requests_running", "Requests in the running batch."};
  Gauge num_requests_waiting{"strata:num_requests_waiting", "Requests waiting to be scheduled."};
  Gauge kv_cache_usage{"strata:kv_cache_usage_perc", "Fraction of KV-cache blocks in use (0..1)."};
  Gauge kv_cache_waste{"strata:kv_cache_waste_perc",
                       "Fraction of allocated KV slots holding no token (internal fragmentation, 0..1)."};
  Gauge kv_blocks_free{"strata:kv_cache_free_blocks", "KV-cache blocks free or evictable."};
  // Bytes of the element types in use (K and V chosen separately): a smaller type shows as more
  // blocks for the same --kv-cache-mem, not as a smaller fraction.
  Gauge kv_block_bytes{"strata:kv_cache_block_bytes",
                       "Bytes of one KV-cache block over all layers, K and V."};
  Gauge kv_total_bytes{"strata:kv_cache_total_bytes",
                       "Bytes of the whole KV cache (all blocks and staging)."};
  Gauge kv_used_bytes{"strata:kv_cache_used_bytes", "Bytes of the KV-cache blocks in use."};
  Counter prompt_tokens{"strata:prompt_tokens_total", "Prompt tokens processed (prefill, incl. cached)."};
  Counter generation_tokens{"strata:generation_tokens_total", "Tokens generated."};
  Counter preemptions{"strata:num_preemptions_total", "Requests preempted (blocks freed, recomputed later)."};
  Counter prefix_cache_queries{"strata:prefix_cache_queries_total",
                               "Prompt tokens looked up in the prefix cache."};
  Counter prefix_cache_hits{"strata:prefix_cache_hits_total", "Prompt tokens found in the prefix cache."};
  // Score-based eviction (kv/kv_evict_policy.h).
  Counter kv_evicted_tokens{
      "strata:kv_evicted_tokens_total",
      "Tokens given back by score-based KV eviction (prompt, and generated ones with h2o)."};
  Counter kv_evictions_skipped{
      "strata:kv_evictions_skipped_total",
      "Score-based eviction attempts not done: no free blocks for the compaction (retried each step)."};
  Counter requests_finished{"strata:request_success_total", "Requests finished (stop or length)."};
  Counter requests_aborted{"strata:request_aborted_total", "Requests aborted or disconnected."};
  // Speculative decoding (vLLM's names).
  Counter spec_num_drafts{"strata:spec_decode_num_drafts_total",
                          "Verification rounds with at least one draft."};
  Counter spec_num_draft_tokens{"strata:spec_decode_num_draft_tokens_total", "Speculative tokens proposed."};
  Counter spec_num_accepted_tokens{"strata:spec_decode_num_accepted_tokens_total",
                                   "Speculative tokens accepted."};
  Counter spec_draft_catch_up_tokens{"strata:spec_decode_draft_catch_up_tokens_total",
                                     "Tokens a model drafter with its own KV fed to catch up with a "
                                     "sequence it had not drafted for."};
  Counter spec_probes{
      "strata:spec_decode_probes_total",
      "Steps in which one sequence drafted although the step-cost model priced drafts out, so "
      "that multi-token steps keep being measured."};
  // Where step time goes: the target's forward pass; the rest before it (planning, scheduling,
  // drafting); the whole step (the remainder is output processing).
  Counter forward_seconds{"strata:model_forward_seconds_total",
                          "Seconds in the target model's forward passes."};
  Counter draft_seconds{"strata:step_draft_seconds_total",
                        "Seconds of steps before the forward pass: planning, scheduling and drafting."};
  Counter step_seconds{"strata:step_seconds_total", "Seconds in engine steps."};
  // KV offload tiers (kv/kv_offload.h): blocks restored instead of recomputed, bytes and time.
  struct Tier {
    Counter hits, read_bytes, written_bytes, read_seconds, write_seconds;
    Gauge stored_bytes;
    explicit Tier(const std::string& t)
        : hits("strata:kv_offload_" + t + "_hits_total", "KV blocks restored from the " + t + " tier."),
          read_bytes("strata:kv_offload_" + t + "_read_bytes_total",
                     "Bytes restored from the " + t + " tier."),
          written_bytes("strata:kv_offload_" + t + "_written_bytes_total",
                        "Bytes stored in the " + t + " tier."),
          read_seconds("strata:kv_offload_" + t + "_read_seconds_total",
                       "Seconds restoring from the " + t + " tier."),
          write_seconds("strata:kv_offload_" + t + "_write_seconds_total",
                        "Seconds storing into the " + t + " tier."),
          stored_bytes("strata:kv_offload_" + t + "_stored_bytes", "Bytes held in the " + t + " tier.") {}
  };
  Tier offload_host{"host"}, offload_disk{"disk"};
  Counter offload_rejected{
      "strata:kv_offload_disk_rejected_files_total",
      "Disk tier files that did not verify (foreign, truncated, corrupted) and were deleted."};
  Counter offload_dropped{"strata:kv_offload_disk_dropped_writes_total",
                          "Blocks not written to the disk tier (writer behind, or an I/O error)."};
  PositionCounter spec_num_accepted_per_pos{"strata:spec_decode_num_accepted_tokens_per_pos_total",
                                            "Speculative tokens accepted, by position in the draft.", 64};

  std::string render() const;  // Prometheus text exposition format
};

}  // namespace strata
