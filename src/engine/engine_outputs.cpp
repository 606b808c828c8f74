// Execution of a step and the processing of its outputs: prompt logits, lossless verification
// of drafts, token emission with stop conditions, KV truncation and prefix publication.
#include <algorithm>
#include <chrono>

#include "core/check.h"
#include "engine/engine_core.h"
#include "engine/spec/verifier.h"

namespace strata {
namespace {

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

bool wants_prompt_row(const Sequence& s, int64_t pos) {
  const int64_t from = s.request->params.prompt_logits_from;
  return s.index == 0 && from >= 0 && pos >= from && pos < s.n_prompt;
}

}  // namespace

void EngineCore::execute(ScheduleOutput& so) {
  batch_.clear();
  batch_.kv_window = config_.kv_window;
  chunk_first_row_.clear();
  chunk_first_hidden_.clear();
  int64_t rows = 0, hidden_rows = 0;
  bool shifted = false, scored = false;
  for (const ScheduledChunk& c : so.chunks) {
    Sequence& s = *c.seq;
    const auto seq_index = static_cast<int32_t>(batch_.block_tables.size());
    batch_.block_tables.push_back(&s.kv.blocks);
    // Score-based eviction: cache positions are positions less the evicted ones.
    const int64_t off = s.kv.pos_offset;
    shifted |= off > 0;
    batch_.score_sinks.push_back(score_sink(s, c.n_tokens - c.n_draft));
    scored |= batch_.score_sinks.back().acc != nullptr;
    chunk_first_row_.push_back(rows);
    chunk_first_hidden_.push_back(hidden_rows);
    const int64_t n_real = c.n_tokens - c.n_draft;
    for (int64_t i = 0; i < n_real; ++i) {
      const int64_t pos = s.n_computed + i;
      const bool last = pos + 1 == static_cast<int64_t>(s.tokens.size());
      // An embedding request wants hidden rows only: no logits, so no output projection.
      const bool hidden = s.pool && s.pool->wants(pos);
      const bool logits = !s.pool && (last || wants_prompt_row(s, pos));
      batch_.add(s.tokens[static_cast<size_t>(pos)], static_cast<int32_t>(pos - off), seq_index, logits,
                 hidden);
      batch_.rope_pos.push_back(static_cast<int32_t>(pos));
      rows += logits;
      hidden_rows += hidden;
    }
    // Drafts follow the last token; every one of their rows is verified.
    for (int32_t j = 0; j < c.n_draft; ++j) {
      const int64_t pos = static_cast<int64_t>(s.tokens.size()) + j;
      batch_.add(s.draft[static_cast<size_t>(j)], static_cast<int32_t>(pos - off), seq_index, true);
      batch_.rope_pos.push_back(static_cast<int32_t>(pos));
      ++rows;
    }
  }
  if (!shifted) batch_.rope_pos.clear();  // the model rotates at `pos`
  if (!scored) batch_.score_sinks.clear();
  const auto t0 = std::chrono::steady_clock::now();
  logits_ = target_->execute(so.copies, batch_);
  so.copies.clear();
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  cost_.observe(batch_.n_tokens(), dt);
  metrics_.forward_seconds.add(dt);
}

// Publishes the sequence's full computed blocks to the prefix cache; with a window on every
// layer, gives back the blocks no later query can reach (a long generation holds about
// window / block_size blocks; shared blocks only lose this sequence's reference).
void EngineCore::publish(Sequence& s) {
  kv_->publish(s.kv, s.tokens, s.n_computed, s.request->prefix_root);
  const KvWindowPolicy& kw = config_.kv_window;
  if (kw.enabled())
    kv_->drop_between(s.kv, static_cast<size_t>(kw.sink_blocks(kv_->block_size())),
                      kw.first_window_pos(s.n_computed));
  else if (const int64_t w = model_.config().common_window(); w > 0)
    kv_->drop_before(s.kv, s.n_computed + 1 - w);
}

void EngineCore::process_outputs(const ScheduleOutput& so) {
  const int64_t n_vocab = model_.config().n_vocab;
  for (size_t ci = 0; ci < so.chunks.size(); ++ci) {
    const ScheduledChunk& c = so.chunks[ci];
    Sequence& s = *c.seq;
    const int64_t first_row = chunk_first_row_[ci];
    const int64_t n_real = c.n_tokens - c.n_draft;
    deliver_prompt_logits(s, c, first_row);
    if (s.pool) pool_hidden_rows(s, n_real, chunk_first_hidden_[ci]);
    s.n_computed += n_real;
    if (s.evict_at > 0 && s.kv.pos_offset == 0 && s.n_computed == s.evict_at &&
        s.n_computed - n_real < s.evict_at && s.status != SequenceStatus::Finished) {
      kv_->publish(s.kv, s.tokens, s.n_computed,
                   s.request->prefix_root);  // the full prompt blocks stay cached
      evict(s);
    } else if (evict_due(s)) {  // h2o during generation
      kv_->publish(s.kv, s.tokens, s.n_computed, s.request->prefix_root);
      evict(s);
    }
    metrics_.prompt_tokens.add(static_cast<double>(
        std::max<int64_t>(0, std::min(s.n_computed, s.n_prompt) - (s.n_computed - n_real))));
    if (s.n_computed != static_cast<int64_t>(s.tokens.size()) || s.status == SequenceStatus::Finished) {
      publish(s);
      continue;  // mid-prompt chunk (or a sequence finished earlier in this step)
    }
    RequestState& r = *s.request;
    if (r.params.stop.max_tokens == 0) {  // scoring or embedding: the prompt is all there is
      publish(s);
      EngineEvent ev;
      if (s.pool) ev.embedding = s.pool->result();
      finish_sequence(s, s.pool ? FinishReason::Stop : FinishReason::Length, std::move(ev));
      continue;
    }
    // The sampling rows: the last real token's and one per draft.
    int64_t rows_before = 0;
    for (int64_t pos = s.n_computed - n_real; pos < s.n_computed - 1; ++pos)
      rows_before += wants_prompt_row(s, pos);
    const float* rows = logits_ + (first_row + rows_before) * n_vocab;
    if (s.index == 0 && s.n_generated() == 0 && r.params.n > 1 && r.seqs.size() == 1) fork_children(s);
    if (s.index == 0 && s.n_generated() == 0)
      for (auto& child : r.seqs)
        if (child.get() != &s && child->n_generated() == 0) emit(*child, rows, 0);
    emit(s, rows, c.n_draft);
  }
}

// Adds the chunk's wanted hidden rows (positions [n_computed, + n_real)) to the sequence's pool.
void EngineCore::pool_hidden_rows(Sequence& s, int64_t n_real, int64_t first_hidden) {
  const int64_t n_embd = model_.config().n_embd;
  const float* rows = target_->hidden() + first_hidden * n_embd;
  for (int64_t pos = s.n_computed; pos < s.n_computed + n_real; ++pos) {
    if (!s.pool->wants(pos)) continue;
    s.pool->add(pos, rows);
    rows += n_embd;
  }
}

void EngineCore::deliver_prompt_logits(Sequence& s, const ScheduledChunk& c, int64_t first_row) {
  // The wanted prompt rows of a chunk are a run of consecutive positions, and the chunk's first
  // logits rows (only a sampling row past the prompt can follow them).
  const int64_t n_real = c.n_tokens - c.n_draft;
  int64_t first_pos = -1, n = 0;
  for (int64_t pos = s.n_computed; pos < s.n_computed + n_real; ++pos) {
    if (!wants_prompt_row(s, pos)) continue;
    if (first_pos < 0) first_pos = pos;
    ++n;
  }
  if (first_pos < 0) return;
  // Rows already delivered before a preemption are not sent again.
  const int64_t skip = std::max<int64_t>(0, s.prompt_logits_sent - first_pos);
  if (n - skip <= 0) return;
  EngineEvent ev;
  ev.id = s.request->id;
  ev.index = s.index;
  ev.logits = logits_ + (first_row + skip) * model_.config().n_vocab;
  ev.logits_first_row = first_pos + skip;
  ev.n_logits_rows = n - skip;
  s.prompt_logits_sent = first_pos + n;
  s.request->on_event(ev);
}

// Verifies the drafts against rows [0, n_draft] and emits the accepted tokens plus the
// target's own token at the first rejection (or after the last draft).
void EngineCore::emit(Sequence& s, const float* rows, int32_t n_draft) {
  RequestState& r = *s.request;
  const int64_t n_vocab = model_.config().n_vocab;
  EngineEvent ev;
  ev.id = r.id;
  ev.index = s.index;
  FinishReason finish = FinishReason::None;
  int32_t accepted = 0;
  for (int32_t i = 0; i <= n_draft && finish == FinishReason::None; ++i) {
    const float* row = rows + static_cast<int64_t>(i) * n_vocab;
    const uint8_t* allowed = nullptr;
    if (s.constraint) {
      std::fill(mask_.begin(), mask_.end(), uint8_t{1});
      s.constraint->mask(mask_.data());
      allowed = mask_.data();
      if (std::find(mask_.begin(), mask_.end(), uint8_t{1}) == mask_.end()) {
        ev.error = "no token of the vocabulary can continue the constrained output";
        finish = FinishReason::Error;
        break;
      }
    }
    s.sampler->distribution(row, allowed, dist_);
    const double u_draw = s.sampler->uniform(RandomStream::Draw);
    int32_t token;
    bool ok = false;
    if (i < n_draft) {
      const TokenDistribution* q = s.draft_q.empty() ? nullptr : &s.draft_q[static_cast<size_t>(i)];
      const Verdict v = verify_draft(dist_, s.draft[static_cast<size_t>(i)], q, u_draw,
                                     s.sampler->uniform(RandomStream::Accept), verify_scratch_);
      token = v.token;
      ok = v.accepted;
    } else {
      token = dist_.tokens.size() == 1 ? dist_.tokens[0] : dist_.draw(u_draw);
    }
    finish = emit_token(s, token, row, ev);
    if (i == n_draft || !ok) break;
    ++accepted;
  }
  s.acceptance.record(std::max(n_draft, s.draft_asked), accepted);
  if (n_draft > 0) {
    s.n_drafted += n_draft;
    s.n_draft_accepted += accepted;
    ++s.n_draft_rounds;
    metrics_.spec_num_drafts.add();
    metrics_.spec_num_draft_tokens.add(n_draft);
    metrics_.spec_num_accepted_tokens.add(accepted);
    for (int32_t i = 0; i < accepted; ++i) metrics_.spec_num_accepted_per_pos.add(i);
  }
  // One inter-token interval per step: the tokens of one step reach the client together.
  const auto now = Clock::now();
  if (s.last_token_time) metrics_.inter_token_latency.observe(seconds(now - *s.last_token_time));
  s.last_token_time = now;
  if (finish != FinishReason::None) {
    finish_sequence(s, finish, std::move(ev));
    return;
  }
  // The accepted drafts' K/V is valid; the rest of what was reserved goes back.
  s.n_computed += accepted;
  kv_->truncate(s.kv, static_cast<int64_t>(s.tokens.size()));
  publish(s);
  s.draft.clear();
  s.draft_q.clear();
  r.on_event(ev);
}

// Appends one sampled token: logprobs, sampler and constraint state, text, stop conditions.
FinishReason EngineCore::emit_token(Sequence& s, int32_t token, const float* row, EngineEvent& ev) {
  RequestState& r = *s.request;
  const StopConditions& stop = r.params.stop;
  const auto n_vocab = static_cast<int32_t>(model_.config().n_vocab);
  metrics_.generation_tokens.add();
  if (!r.first_token) {
    r.first_token = Clock::now();
    metrics_.time_to_first_token.observe(seconds(*r.first_token - r.arrival));
  }
  TokenOutput out;
  out.token = token;
  if (r.params.top_logprobs >= 0) {
    out.logprob = token_logprob(row, n_vocab, token);
    out.top = top_logprobs(row, n_vocab, r.params.top_logprobs);
  }
  // A constraint allows end-of-generation only once its match is complete: then it ends the
  // choice even with ignore_eos.
  const bool eog = (!stop.ignore_eos || s.constraint) && model_.tokenizer().is_eog(token);
  const bool stop_token =
      std::find(stop.stop_token_ids.begin(), stop.stop_token_ids.end(), token) != stop.stop_token_ids.end();
  s.sampler->accept(token);
  if (s.constraint && !eog) s.constraint->accept(token);
  s.tokens.push_back(token);
  if (eog || stop_token) {
    // The stop token itself is not text of the completion.
    ev.text += s.stop->push(s.detok->finish());
    ev.text += s.stop->flush();
    ev.tokens.push_back(std::move(out));
    return FinishReason::Stop;
  }
  out.piece = model_.tokenizer().token_to_piece(token);
  ev.text += s.stop->push(s.detok->push(token));
  ev.tokens.push_back(std::move(out));
  FinishReason finish = FinishReason::None;
  if (s.stop->stopped())
    finish = FinishReason::Stop;
  else if (s.constraint && s.constraint->is_complete() && !s.constraint->can_continue())
    finish = FinishReason::Stop;
  else if (s.n_generated() >= stop.max_tokens || static_cast<int64_t>(s.tokens.size()) >= max_len_)
    finish = FinishReason::Length;
  if (finish != FinishReason::None && !s.stop->stopped()) {
    ev.text += s.stop->push(s.detok->finish());
    if (s.stop->stopped()) finish = FinishReason::Stop;
    ev.text += s.stop->flush();
  }
  return finish;
}

void EngineCore::fork_children(Sequence& parent) {
  RequestState& r = *parent.request;
  for (int32_t i = 1; i < r.params.n; ++i) {
    auto child = make_sequence(r, i);
    child->tokens = parent.tokens;
    child->n_prompt = parent.n_prompt;
    child->evict_at = parent.evict_at;
    child->evict_from = parent.evict_from;
    child->evict_track = parent.evict_track;
    child->evict_keys = parent.evict_keys;
    child->evict_scores = parent.evict_scores;
    child->evict_pos = parent.evict_pos;
    child->n_computed = parent.n_computed;
    kv_->fork(parent.kv, child->kv);
    scheduler_->add_running(child.get());
    r.seqs.push_back(std::move(child));
  }
}

void EngineCore::finish_sequence(Sequence& s, FinishReason reason, EngineEvent ev) {
  RequestState& r = *s.request;
  if (s.status == SequenceStatus::Waiting && !r.first_scheduled && s.index == 0) --n_unscheduled_;
  scheduler_->remove(&s);
  kv_->free(s.kv);
  for (const auto& d : drafters_) {
    d->release(s.uid);
    if (reason == FinishReason::Stop || reason == FinishReason::Length)
      d->observe_finished(r.partition, s.tokens, s.n_prompt);
  }
  s.status = SequenceStatus::Finished;
  ++r.n_finished;
  ev.id = r.id;
  ev.index = s.index;
  ev.finish = reason;
  // Children fork when the prompt is done; a request that fails or is aborted before then
  // has only its first sequence.
  const bool failed = reason == FinishReason::Abort || reason == FinishReason::Error;
  const bool done =
      r.n_finished == static_cast<int32_t>(r.seqs.size()) &&
      (static_cast<int32_t>(r.seqs.size()) == r.params.n || failed || r.params.stop.max_tokens == 0);
  if (done) {
    ev.request_done = true;
    ev.usage.prompt_tokens = static_cast<int64_t>(r.params.prompt.size());
    ev.usage.cached_prompt_tokens = r.cached_prompt_tokens;
    for (const auto& q : r.seqs) {
      ev.usage.completion_tokens += q->n_generated();
      ev.usage.draft_tokens += q->n_drafted;
      ev.usage.accepted_draft_tokens += q->n_draft_accepted;
      ev.usage.draft_rounds += q->n_draft_rounds;
    }
    metrics_.e2e_request_latency.observe(seconds(Clock::now() - r.arrival));
    if (failed)
      metrics_.requests_aborted.add();
    else
      metrics_.requests_finished.add();
  }
  r.on_event(ev);
  if (done) finished_.push_back(r.id);
}

}  // namespace strata
