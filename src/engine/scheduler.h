// Iteration-level scheduling with one code path for prefill and decode.
//
// Every step gets a token budget. Running sequences go first (a decode needs one token, a
// sequence still in its prompt gets its next chunk), then waiting sequences are admitted
// first-come-first-served with a chunk of their prompt, until the budget or the sequence limit
// is reached. When the pool runs out of blocks, the most recently admitted running sequence is
// preempted: its blocks are freed and it goes back to the front of the queue, to be recomputed
// (cheaply, when its blocks are still in the prefix cache).
//
// A decoding sequence with drafts (Sequence::spec_k) gets one verification chunk of its last
// token plus up to spec_k drafts: the budget and the KV blocks shrink the drafts, never split
// the chunk, and drafts are dropped before anything is preempted for them.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "engine/sequence.h"
#include "engine/token_budget.h"
#include "kv/kv_cache_manager.h"
#include "kv/kv_window_policy.h"

namespace strata {

struct SchedulerConfig {
  int32_t max_batched_tokens = kDefaultMaxBatchedTokens;
  int32_t max_num_seqs = 64;
  bool static_batching = false;  // admit only when nothing runs (request-level batching baseline)
  // Attention sinks + window: prefix-cache hits outside the window are given back at admission
  // (a long sequence's hits could otherwise hold more blocks than the pool has).
  KvWindowPolicy kv_window;
};

struct ScheduledChunk {
  Sequence* seq;
  int64_t n_tokens;     // tokens [seq->n_computed, seq->n_computed + n_tokens) run this step
  int32_t n_draft = 0;  // of them, speculative tokens after the last accepted one (a decode only)
};

struct ScheduleOutput {
  std::vector<ScheduledChunk> chunks;
  std::vector<BlockCopy> copies;     // copy-on-write, to run before the forward pass
  std::vector<Sequence*> preempted;  // sent back to the queue this step
  std::vector<Sequence*> admitted;   // moved from waiting to running this step
  int64_t prefix_queried_tokens = 0;
  int64_t prefix_hit_tokens = 0;
  bool empty() const { return chunks.empty(); }
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, KvCacheManager& kv);

  void add_waiting(Sequence* seq);  // at the back of the queue
  void add_running(Sequence* seq);  // a forked child joins its parent in the batch
  // Removes a sequence wherever it is (abort / finish); does not free its blocks.
  void remove(Sequence* seq);

  ScheduleOutput schedule();

  size_t n_waiting() const { return waiting_.size(); }
  size_t n_running() const { return running_.size(); }
  const std::vector<Sequence*>& running() const { return running_; }
  const std::deque<Sequence*>& waiting() const { return waiting_; }

 private:
  bool schedule_running(Sequence* seq, int64_t& budget, ScheduleOutput& out);
  void admit_waiting(int64_t& budget, ScheduleOutput& out);
  void preempt(Sequence* victim, ScheduleOutput& out);

  SchedulerConfig config_;
  KvCacheManager& kv_;
  std::deque<Sequence*> waiting_;
  std::vector<Sequence*> running_;  // admission order
  uint64_t next_admission_ = 0;
};

}  // namespace strata
