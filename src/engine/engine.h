// The engine: requests in, token events out, one model, one loop. It drives every forward pass
// of Strata: the server, and offline (engine/offline.h) run, bench, perplexity, kld and logits.
//
// Each step is schedule -> execute -> process outputs (see engine_core.h): the scheduler packs a
// token budget from running decodes (with their speculative drafts) first, then chunks of
// waiting prefills; the executor runs them as one ragged batch over the paged KV cache; the
// outputs are verified, sampled, detokenized, checked against stop conditions and delivered as
// events. Out of KV blocks preempts the most recently admitted request (its blocks are freed and
// it is recomputed later) — never an error.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/metrics.h"
#include "engine/request.h"
#include "engine/spec/spec_config.h"
#include "engine/token_budget.h"
#include "kv/kv_evict_policy.h"
#include "kv/kv_window_policy.h"
#include "model/model.h"

namespace strata {

// One eviction of one sequence (EngineConfig::kv_evict_observer): what each layer and kv head
// kept, as original positions.
struct KvEvictionEvent {
  RequestId id = 0;
  int32_t index = 0;       // the choice (n > 1)
  int64_t n_computed = 0;  // positions computed when it happened; later ones are all kept
  // [n_layer * n_head_kv] (layer-major): the positions kept, increasing
  std::vector<std::vector<int32_t>> kept;
};

struct EngineConfig {
  int32_t block_size = 16;
  size_t kv_cache_bytes = 0;        // 0: kv_cache_fraction of the available memory
  int64_t kv_cache_tokens = 0;      // > 0: a pool of exactly this many tokens (offline tools)
  double kv_cache_fraction = 0.25;  // of MemAvailable, when kv_cache_bytes is 0
  KvCacheType kv_type;              // element types of the cache (F16 by default)
  int32_t max_batched_tokens = kDefaultMaxBatchedTokens;  // token budget of one step
  int32_t max_num_seqs = 64;                              // sequences in one step
  int32_t max_queue = 1024;                               // waiting requests beyond this are refused (429)
  int64_t max_model_len = 0;  // prompt + output limit; 0: the model's training context
  bool prefix_caching = true;
  bool static_batching = false;  // request-level batching baseline (benchmarks only)
  std::string model_name;        // extra key of the prefix-cache hash
  SpecConfig spec;               // speculative decoding (off by default)
  // StreamingLLM attention sinks + window (kv/kv_window_policy.h), off by default. With it on,
  // max_model_len 0 means kWindowedMaxModelLen: sequences may outgrow the training context.
  KvWindowPolicy kv_window;
  // Score-based eviction of long prompts (snapkv, h2o or recent, kv/kv_evict_policy.h), off by
  // default: after the prefill of a prompt longer than budget + window tokens, each layer and kv
  // head keeps its budget chosen prompt tokens and the window; the rest of the prompt's blocks
  // go back. h2o goes on evicting during generation.
  KvEvictPolicy kv_evict;
  // Called after each eviction (tests and diagnostics; null: none), on the engine thread.
  std::function<void(const KvEvictionEvent&)> kv_evict_observer;
  // Tiers below the prefix cache (kv/kv_offload.h; need prefix caching): host RAM for evicted
  // blocks, and a directory of block files that outlives the process, bounded by bytes.
  size_t kv_offload_mem = 0;                 // --kv-offload-mem
  std::string kv_offload_dir;                // --kv-offload-dir; empty: no disk tier
  size_t kv_offload_disk = size_t{4} << 30;  // --kv-offload-disk
};

// The default length limit with --kv-window: positions stay absolute, so the rotary table
// (positions x head_dim floats) grows with the longest sequence.
inline constexpr int64_t kWindowedMaxModelLen = int64_t{1} << 20;

enum class SubmitStatus { Accepted, QueueFull, ShuttingDown };

struct SubmitResult {
  SubmitStatus status = SubmitStatus::Accepted;
  RequestId id = 0;
};

struct EngineStats {
  int32_t running = 0;
  int32_t waiting = 0;
  int32_t kv_blocks_total = 0;
  int32_t kv_blocks_used = 0;    // referenced by a running request
  int32_t kv_blocks_cached = 0;  // free but holding a cached prefix block
  size_t kv_block_bytes = 0;     // one block over all layers, K and V, in the configured types
  size_t kv_bytes_total = 0;     // the whole cache (blocks and KIVI staging)
  double kv_waste = 0.0;         // allocated-but-empty slots / allocated slots
  int64_t prefix_queries = 0;    // tokens
  int64_t prefix_hits = 0;       // tokens
  int64_t preemptions = 0;
  int64_t kv_evicted_tokens = 0;  // score-based eviction (EngineConfig::kv_evict)
  int64_t steps = 0;
};

class EngineCore;

class Engine {
 public:
  Engine(Model& model, const EngineConfig& config);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Checks the parameters and that prompt + max_tokens can ever fit in the whole KV pool and
  // the model length; throws strata::Error (a 400 for the server) otherwise. Thread-safe.
  // max_tokens 0 scores the prompt only (with prompt_logits_from).
  SubmitResult submit(RequestParams params, EventCallback on_event);
  // Frees the request's blocks before the next step; no further events except its Abort finish.
  void abort(RequestId id);

  // Runs the loop on a background thread until shutdown().
  void start();
  // Refuses new requests, lets running ones finish for up to `timeout`, then aborts the rest
  // and stops the loop. Returns true if everything finished in time.
  bool shutdown(std::chrono::milliseconds timeout);

  // One step on the calling thread (no background loop): returns false when idle.
  bool step();
  // Steps until no request is left (tests and CLI tools without a loop thread).
  void run_until_idle();

  EngineStats stats() const;
  const EngineMetrics& metrics() const { return metrics_; }
  // False when the loop thread died or a step has been running for longer than `stall`.
  bool healthy(std::chrono::milliseconds stall = std::chrono::seconds(60)) const;
  const Model& model() const { return model_; }
  const EngineConfig& config() const { return config_; }
  int64_t max_model_len() const;
  // Most tokens (prompt + output) one sequence can ever hold: min(max_model_len, KV pool size).
  int64_t capacity_tokens() const;

 private:
  struct Impl;
  Model& model_;
  EngineConfig config_;
  EngineMetrics metrics_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata
