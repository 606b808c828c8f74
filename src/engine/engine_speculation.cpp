// The speculative part of a step: draft lengths, proposals, and the cost model behind them.
#include <algorithm>
#include <chrono>
#include <numeric>

#include "core/check.h"
#include "core/log.h"
#include "engine/engine_core.h"

namespace strata {
namespace {

bool is_model_method(DraftMethod m) {
  return m != DraftMethod::Ngram && m != DraftMethod::Suffix;
}

}  // namespace

DraftSlot EngineCore::make_slot(Sequence& s, int32_t max_draft) const {
  DraftSlot slot;
  slot.seq_id = s.uid;
  slot.tokens = &s.tokens;
  slot.n_prompt = s.n_prompt;
  slot.blocks = &s.kv.blocks;
  slot.sampler = s.sampler.get();
  slot.constraint = s.constraint.get();
  slot.partition = &s.request->partition;
  slot.max_draft = max_draft;
  slot.p_min = s.request->spec.draft_p_min;
  return slot;
}

// Times target steps of 1, 4 and 16 tokens (after a warm-up), on a few blocks borrowed from the
// pool; the steps that run later refine the estimate (StepCostModel::observe). Each size keeps the
// faster of two runs: one run slowed by anything else on the machine (seen: a 1-token step at
// 112 ms next to 86 ms) prices every draft of the first steps too high, and the controller then
// drafts one token where it would draft three.
void EngineCore::calibrate_cost_model() {
  if (cost_calibrated_) return;
  const int64_t max_n = std::min<int64_t>(16, config_.max_batched_tokens);
  SequenceKv scratch;
  std::vector<BlockCopy> none;
  if (!kv_->reserve(scratch, max_n, 0, none)) return;  // the pool is busy: try again later
  cost_calibrated_ = true;
  std::vector<std::pair<int64_t, double>> samples;
  ForwardBatch b;
  constexpr int kRuns = 2;
  for (int64_t n = 1; n <= max_n; n *= 4) {
    double best = 0.0;
    const int warm_up = n == 1 ? 1 : 0;  // the very first run touches every buffer
    for (int rep = 0; rep < warm_up + kRuns; ++rep) {
      b.clear();
      b.block_tables.push_back(&scratch.blocks);
      for (int64_t i = 0; i < n; ++i)
        b.add(static_cast<int32_t>(i % model_.config().n_vocab), static_cast<int32_t>(i), 0, i + 1 == n);
      const auto t0 = std::chrono::steady_clock::now();
      target_->execute({}, b);
      const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (rep >= warm_up) best = rep == warm_up ? dt : std::min(best, dt);
    }
    samples.push_back({n, best});
  }
  kv_->free(scratch);
  cost_.set_samples(samples);
  std::string line;
  for (const auto& [n, s] : samples)
    line += " " + std::to_string(n) + ":" + std::to_string(s * 1e3).substr(0, 6) + "ms";
  log_info("speculative decoding: step cost by batched tokens", line);
}

void EngineCore::plan_speculation() {
  std::vector<Sequence*> seqs;
  std::vector<SpecCandidate> cands;
  std::vector<uint8_t> resting;                // per candidate: its model drafter is rested this step
  std::vector<const Drafter*> round_drafters;  // the model drafters the candidates' rounds run on
  int64_t base_tokens = 0;
  for (Sequence* s : scheduler_->running()) {
    s->spec_k = 0;
    s->draft_asked = 0;
    s->draft.clear();
    s->draft_q.clear();
    const int64_t left = s->n_uncomputed();
    base_tokens += std::min<int64_t>(left, config_.max_batched_tokens);
    const RequestState& r = *s->request;
    if (left != 1 || !r.spec.enabled() || s->status != SequenceStatus::Running) continue;
    // Never draft past max_tokens or the model length (the last emitted token needs no draft).
    const int64_t cap = std::min<int64_t>({r.spec.draft_max, r.params.stop.max_tokens - s->n_generated() - 1,
                                           max_len_ - static_cast<int64_t>(s->tokens.size()) - 1});
    if (cap <= 0) continue;
    // A model drafter that keeps proposing nothing for this sequence is rested; cheap drafters
    // are free to ask and still are.
    bool has_model = false, has_cheap = false;
    for (const DraftMethodSpec& m : r.spec.methods)
      (is_model_method(m.method) ? has_model : has_cheap) = true;
    const bool rest_model = has_model && r.spec.adaptive && s->acceptance.hold();
    if (rest_model && !has_cheap) {
      s->acceptance.relax();
      continue;
    }
    // The chain's model drafter (if any) drafts in rounds batched over the sequences and is
    // priced by them; cheap drafters cost nothing worth pricing.
    SpecCandidate c{s->acceptance.alpha(), 0.0, static_cast<int32_t>(cap), 0};
    double catch_up = 0.0;  // in target tokens of a batched chunk
    for (const DraftMethodSpec& m : r.spec.methods) {
      const Drafter* d = drafter_for(m);
      if (!d || !is_model_method(m.method)) continue;
      const auto it = std::find(round_drafters.begin(), round_drafters.end(), d);
      c.drafter = static_cast<int32_t>(it - round_drafters.begin());
      if (it == round_drafters.end()) round_drafters.push_back(d);
      if (const int64_t lag = d->lag(s->uid, s->tokens); lag > 0)
        catch_up = d->relative_cost() * static_cast<double>(lag);
      break;
    }
    seqs.push_back(s);
    resting.push_back(rest_model);
    // The catch-up is paid once and serves the drafts of the steps after it: spread over the
    // steps it can still serve (at most 16 ahead: text changes character, and so does alpha).
    c.first_cost = catch_up / static_cast<double>(std::clamp<int64_t>(cap, 1, 16));
    cands.push_back(c);
  }
  if (seqs.empty()) return;
  bool adaptive = false;
  for (Sequence* s : seqs) adaptive = adaptive || s->request->spec.adaptive;
  if (adaptive) calibrate_cost_model();
  // A catch-up of n tokens runs as one batched chunk: its per-token cost is the target's
  // n-token step per token (much less than a decode), times the drafter's relative cost.
  const double per_token = cost_.empty() ? 0.0 : cost_.seconds(16) / 16.0;
  for (SpecCandidate& c : cands) c.first_cost *= per_token;
  // What a round has really cost so far (bounded); before the first rounds, the weight-byte
  // ratio of a target step of as many tokens.
  std::vector<DraftRoundSeconds> rounds;
  for (const Drafter* d : round_drafters)
    rounds.push_back([this, d](int64_t n) {
      return draft_round_seconds(d->relative_cost(), d->round_seconds(n),
                                 cost_.empty() ? 0.0 : cost_.seconds(n));
    });
  SpecController(adaptive ? &cost_ : nullptr).choose(cands, base_tokens, rounds);
  if (adaptive && probe_.apply(cands, base_tokens)) metrics_.spec_probes.add(1.0);
  for (size_t i = 0; i < seqs.size(); ++i) {
    Sequence& s = *seqs[i];
    const SpecConfig& spec = s.request->spec;
    const int32_t k = spec.adaptive ? cands[i].k : cands[i].max_k;
    if (k <= 0) {
      s.acceptance.relax();
      continue;
    }
    s.draft_asked = k;
    // The chain in order: the first cheap drafter with a long enough proposal wins; a model
    // drafter later in the chain drafts after scheduling.
    for (const DraftMethodSpec& m : spec.methods) {
      if (is_model_method(m.method)) {
        if (!resting[i]) s.spec_k = k;
        break;
      }
      DraftSlot slot = make_slot(s, k);
      DraftSlot* p = &slot;
      drafter_for(m)->draft({&p, 1});
      if (static_cast<int32_t>(slot.draft.size()) >= std::max(1, spec.draft_min)) {
        s.draft = std::move(slot.draft);
        constrain_drafts(s);
        s.spec_k = static_cast<int32_t>(s.draft.size());
        break;
      }
    }
  }
}

// Cuts a proposal at its first token the grammar would not allow (the constraint is left as it was).
void EngineCore::constrain_drafts(Sequence& s) {
  if (!s.constraint || s.draft.empty()) return;
  int32_t ok = 0;
  while (ok < static_cast<int32_t>(s.draft.size()) && s.constraint->accept(s.draft[static_cast<size_t>(ok)]))
    ++ok;
  if (ok > 0) s.constraint->rollback(ok);
  s.draft.resize(static_cast<size_t>(ok));
  if (!s.draft_q.empty()) s.draft_q.resize(static_cast<size_t>(ok));
}

void EngineCore::draft_with_models(ScheduleOutput& so) {
  // Copy-on-write first: drafters read the copied blocks.
  if (!so.copies.empty()) {
    target_->execute(so.copies, ForwardBatch{});
    for (const auto& d : drafters_) d->copy_blocks(so.copies);
    so.copies.clear();
  }
  std::map<Drafter*, std::vector<DraftSlot>> by_drafter;
  std::map<Drafter*, std::vector<Sequence*>> owners;
  for (ScheduledChunk& c : so.chunks) {
    Sequence& s = *c.seq;
    if (c.n_draft == 0) {
      s.draft.clear();
      continue;
    }
    if (!s.draft.empty()) {  // a cheap drafter proposed before scheduling
      s.draft.resize(std::min<size_t>(s.draft.size(), static_cast<size_t>(c.n_draft)));
      continue;
    }
    for (const DraftMethodSpec& m : s.request->spec.methods) {
      if (!is_model_method(m.method)) continue;
      Drafter* d = drafter_for(m);
      STRATA_CHECK(d, "drafter ", m.name(), " is not loaded");
      s.draft_asked = c.n_draft;  // the scheduler's budget may have shortened it
      by_drafter[d].push_back(make_slot(s, c.n_draft));
      owners[d].push_back(&s);
      break;
    }
  }
  for (auto& [d, slots] : by_drafter) {
    std::vector<DraftSlot*> ptrs;
    int64_t lag_before = 0;
    for (DraftSlot& sl : slots) {
      ptrs.push_back(&sl);
      lag_before += d->lag(sl.seq_id, *sl.tokens);
    }
    d->draft(ptrs);
    int64_t lag_after = 0;
    for (const DraftSlot& sl : slots) lag_after += d->lag(sl.seq_id, *sl.tokens);
    if (lag_before > lag_after)
      metrics_.spec_draft_catch_up_tokens.add(static_cast<double>(lag_before - lag_after));
    const auto& seqs = owners[d];
    for (size_t i = 0; i < slots.size(); ++i) {
      Sequence& s = *seqs[i];
      const bool proposed =
          static_cast<int32_t>(slots[i].draft.size()) >= std::max(1, s.request->spec.draft_min);
      s.acceptance.model_proposed(proposed);
      if (!proposed) continue;
      s.draft = std::move(slots[i].draft);
      s.draft_q = std::move(slots[i].q);
      constrain_drafts(s);
    }
  }
  // The chunks carry what was actually proposed.
  for (ScheduledChunk& c : so.chunks) {
    if (c.n_draft == 0) continue;
    const auto n = static_cast<int32_t>(c.seq->draft.size());
    c.n_tokens -= c.n_draft - n;
    c.n_draft = n;
  }
}

}  // namespace strata
