#include "engine/scheduler.h"

#include <algorithm>

#include "core/check.h"

namespace strata {
namespace {

// Tokens a chunk of seq may cover: a sequence that will evict stops at its eviction point, where
// the engine compacts its cache before anything later is computed.
int64_t chunk_limit(const Sequence& seq) {
  return seq.evict_pending() ? seq.evict_at - seq.n_computed : INT64_MAX;
}

}  // namespace

Scheduler::Scheduler(const SchedulerConfig& config, KvCacheManager& kv) : config_(config), kv_(kv) {
  STRATA_CHECK(config.max_batched_tokens > 0 && config.max_num_seqs > 0);
}

void Scheduler::add_waiting(Sequence* seq) {
  seq->status = SequenceStatus::Waiting;
  waiting_.push_back(seq);
}

void Scheduler::add_running(Sequence* seq) {
  seq->status = SequenceStatus::Running;
  seq->admitted_order = next_admission_++;
  running_.push_back(seq);
}

void Scheduler::remove(Sequence* seq) {
  running_.erase(std::remove(running_.begin(), running_.end(), seq), running_.end());
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), seq), waiting_.end());
}

void Scheduler::preempt(Sequence* victim, ScheduleOutput& out) {
  running_.erase(std::remove(running_.begin(), running_.end(), victim), running_.end());
  kv_.free(victim->kv);
  victim->n_computed = 0;
  victim->status = SequenceStatus::Waiting;
  waiting_.push_front(victim);
  out.preempted.push_back(victim);
  // A victim scheduled earlier in this step must not run.
  out.chunks.erase(std::remove_if(out.chunks.begin(), out.chunks.end(),
                                  [victim](const ScheduledChunk& c) { return c.seq == victim; }),
                   out.chunks.end());
}

// Returns false when `seq` itself had to be preempted.
bool Scheduler::schedule_running(Sequence* seq, int64_t& budget, ScheduleOutput& out) {
  const int64_t n_real = std::min({seq->n_uncomputed(), budget, chunk_limit(*seq)});
  if (n_real <= 0) return true;
  const bool decode = seq->n_uncomputed() == 1;
  int32_t n_draft = decode ? static_cast<int32_t>(std::min<int64_t>(seq->spec_k, budget - 1)) : 0;
  while (!kv_.reserve(seq->kv, seq->n_computed + n_real + n_draft, seq->n_computed, out.copies)) {
    if (n_draft > 0) {  // drafts are the first thing to go
      n_draft = 0;
      continue;
    }
    // The most recently admitted sequence makes room (possibly `seq` itself).
    Sequence* victim = *std::max_element(running_.begin(), running_.end(), [](Sequence* a, Sequence* b) {
      return a->admitted_order < b->admitted_order;
    });
    for (const ScheduledChunk& c : out.chunks)
      if (c.seq == victim) budget += c.n_tokens;
    preempt(victim, out);
    if (victim == seq) return false;
  }
  out.chunks.push_back({seq, n_real + n_draft, n_draft});
  budget -= n_real + n_draft;
  return true;
}

void Scheduler::admit_waiting(int64_t& budget, ScheduleOutput& out) {
  // Static batching admits the whole batch at once (up to max_num_seqs, whatever the budget);
  // the prompts beyond this step's budget are prefilled in later steps as running sequences.
  const bool whole_batch = config_.static_batching;
  while (!waiting_.empty() && (budget > 0 || whole_batch) &&
         static_cast<int32_t>(running_.size()) < config_.max_num_seqs) {
    Sequence* seq = waiting_.front();
    // Embedding requests need the hidden state of every position: they never skip any.
    if (seq->kv.blocks.empty() && seq->request->params.pooling == Pooling::None) {
      // At least the last token is always computed: its logits are needed.
      // An evicting sequence computes its scored queries itself (snapkv: the observation window;
      // h2o: all), and at least one token before its eviction point.
      int64_t limit = static_cast<int64_t>(seq->tokens.size()) - 1;
      if (seq->evict_pending() || seq->evict_track) limit = std::min(limit, seq->evict_from);
      const int32_t hit =
          kv_.acquire_prefix(seq->kv, seq->tokens, static_cast<int32_t>(limit), seq->request->prefix_root);
      if (kv_.prefix_caching()) {
        out.prefix_queried_tokens += limit;
        out.prefix_hit_tokens += hit;
      }
      seq->n_computed = hit;
      if (const KvWindowPolicy& kw = config_.kv_window; kw.enabled() && hit > 0)
        kv_.drop_between(seq->kv, static_cast<size_t>(kw.sink_blocks(kv_.block_size())),
                         kw.first_window_pos(hit));
      if (seq->index == 0 && seq->n_generated() == 0) seq->request->cached_prompt_tokens = hit;
    }
    const int64_t n = std::min({seq->n_uncomputed(), std::max<int64_t>(budget, 0), chunk_limit(*seq)});
    if (!kv_.reserve(seq->kv, seq->n_computed + n, seq->n_computed, out.copies)) {
      kv_.free(seq->kv);  // give the prefix hits back; try again next step
      seq->n_computed = 0;
      break;
    }
    waiting_.pop_front();
    add_running(seq);
    out.admitted.push_back(seq);
    if (n > 0) out.chunks.push_back({seq, n});
    budget -= n;
  }
}

ScheduleOutput Scheduler::schedule() {
  ScheduleOutput out;
  int64_t budget = config_.max_batched_tokens;
  const std::vector<Sequence*> snapshot = running_;
  for (Sequence* seq : snapshot) {
    if (budget <= 0 || static_cast<int32_t>(out.chunks.size()) >= config_.max_num_seqs) break;
    if (seq->status != SequenceStatus::Running) continue;  // preempted earlier in this step
    schedule_running(seq, budget, out);
  }
  // New work only when nothing had to be preempted (it would just be preempted again), and in
  // static mode only when the previous batch has completely finished.
  const bool may_admit = out.preempted.empty() && (!config_.static_batching || running_.empty());
  if (may_admit) admit_waiting(budget, out);
  return out;
}

}  // namespace strata
