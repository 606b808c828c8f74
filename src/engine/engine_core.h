// The single-threaded core of the engine: requests, scheduler, KV cache, executors, drafters.
// Each step is schedule -> draft -> execute -> process outputs:
//   plan:     decoding sequences get a draft length (adaptive) and the cheap drafters propose;
//   schedule: the token budget and KV blocks are handed out (scheduler.h);
//   draft:    model drafters propose into the blocks just reserved;
//   execute:  one ragged batch of prefill chunks, decodes and verification chunks;
//   process:  prompt logits are delivered, drafts verified losslessly, tokens emitted, stop
//             conditions checked, rejected drafts' blocks truncated, full blocks published.
// The Engine (engine.h) wraps it with a thread-safe inbox and a loop thread.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "engine/engine.h"
#include "engine/executor.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "engine/spec/drafter.h"
#include "engine/spec/spec_controller.h"
#include "engine/spec/step_cost_model.h"
#include "kv/kv_offload.h"

namespace strata {

class EngineCore {
 public:
  EngineCore(Model& model, const EngineConfig& config, EngineMetrics& metrics);
  ~EngineCore();

  int64_t max_len() const { return max_len_; }
  int32_t n_blocks() const { return kv_->pool().n_total(); }
  const KvCacheManager& kv() const { return *kv_; }
  // The request's resolved speculative configuration (throws strata::Error for one this engine
  // cannot run).
  SpecConfig resolve_spec(const std::optional<SpecOverride>& request) const;

  void add_request(std::unique_ptr<RequestState> r);
  void abort(RequestId id, FinishReason reason, const std::string& error);
  void abort_all(FinishReason reason, const std::string& error);
  // One step; false when there was nothing to do.
  bool step();
  bool has_work() const { return scheduler_->n_waiting() + scheduler_->n_running() > 0; }
  // Requests added and not yet scheduled for the first time (for the queue limit).
  int32_t n_unscheduled() const { return n_unscheduled_; }
  // Fills the scheduler/KV part of the stats.
  void fill_stats(EngineStats& s) const;

 private:
  std::unique_ptr<Sequence> make_sequence(RequestState& r, int32_t index);
  void build_drafters();
  Drafter* drafter_for(const DraftMethodSpec& m) const;
  // Speculation (engine_speculation.cpp).
  void plan_speculation();
  void draft_with_models(ScheduleOutput& so);
  void constrain_drafts(Sequence& s);
  void calibrate_cost_model();
  DraftSlot make_slot(Sequence& s, int32_t max_draft) const;
  // Execution and outputs (engine_outputs.cpp).
  void execute(ScheduleOutput& so);
  void process_outputs(const ScheduleOutput& so);
  void publish(Sequence& s);
  // Score-based eviction (engine_eviction.cpp): where a chunk's queries are scored (acc null:
  // none), whether a generating h2o sequence is due a compaction, each (layer, kv head)'s chosen
  // slots, and the compaction.
  AttentionScoreSink score_sink(Sequence& s, int64_t n_real);
  bool evict_due(const Sequence& s) const;
  std::vector<std::vector<int32_t>> evict_selection(const Sequence& s, int64_t n_prefix) const;
  void evict(Sequence& s);
  void deliver_prompt_logits(Sequence& s, const ScheduledChunk& c, int64_t first_row);
  void pool_hidden_rows(Sequence& s, int64_t n_real, int64_t first_hidden);
  void emit(Sequence& s, const float* rows, int32_t n_draft);
  FinishReason emit_token(Sequence& s, int32_t token, const float* row, EngineEvent& ev);
  void fork_children(Sequence& parent);
  void finish_sequence(Sequence& s, FinishReason reason, EngineEvent ev);
  void abort_request(RequestState& r, FinishReason reason, const std::string& error);
  void erase_finished();
  void setup_offload(const KvGeometry& g);
  void sync_offload_metrics();

  Model& model_;
  EngineConfig config_;
  EngineMetrics& metrics_;
  int64_t max_len_;
  std::unique_ptr<KvCacheManager> kv_;
  // Declared after kv_, so destroyed before it; its disk tier writes out its queue then.
  std::unique_ptr<KvOffload> offload_;
  struct TierTotals {
    int64_t hits = 0, bytes_read = 0, bytes_written = 0, read_ns = 0, write_ns = 0, rejected = 0, dropped = 0;
  } host_seen_, disk_seen_;  // totals already added to the metrics
  std::unique_ptr<ModelExecutor> target_;
  std::vector<std::unique_ptr<Drafter>> drafters_;
  std::unique_ptr<Scheduler> scheduler_;
  StepCostModel cost_;
  bool cost_calibrated_ = false;
  PricedOutProbe probe_;
  std::map<RequestId, std::unique_ptr<RequestState>> requests_;
  // Finished requests are destroyed at the end of the step: chunks of this step may still point
  // at their sequences.
  std::vector<RequestId> finished_;
  uint64_t next_uid_ = 1;
  int32_t n_unscheduled_ = 0;
  ForwardBatch batch_;
  const float* logits_ = nullptr;            // [n_outputs, n_vocab] of the last execute
  std::vector<int64_t> chunk_first_row_;     // per chunk of the last execute: its first logits row
  std::vector<int64_t> chunk_first_hidden_;  // per chunk of the last execute: its first hidden row
  // Scratch of output processing.
  TokenDistribution dist_;
  std::vector<uint8_t> mask_;  // [n_vocab]
  std::vector<float> verify_scratch_;
};

}  // namespace strata
