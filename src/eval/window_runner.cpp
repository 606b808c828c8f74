#include "eval/window_runner.h"

#include <algorithm>
#include <optional>

#include "core/check.h"
#include "core/tensor_type.h"

namespace strata::eval {

namespace {

EngineConfig window_engine_config(int64_t n_ctx, const KvCacheType& kv_type, const KvWindowPolicy& kv_window,
                                  const KvEvictPolicy& kv_evict) {
  EngineConfig c;
  c.kv_evict = kv_evict;
  c.kv_cache_tokens = n_ctx;
  c.kv_window = kv_window;
  if (kv_window.enabled())
    c.kv_cache_tokens = std::min(n_ctx, kv_window.max_held_tokens(WindowRunner::kChunkRows, c.block_size));
  c.max_model_len = n_ctx;
  c.max_num_seqs = 1;
  c.max_batched_tokens = static_cast<int32_t>(WindowRunner::kChunkRows);
  c.prefix_caching = false;
  c.kv_type = kv_type;
  return c;
}

}  // namespace

WindowRunner::WindowRunner(Model& model, int64_t n_ctx, const KvCacheType& kv_type,
                           const KvWindowPolicy& kv_window, const KvEvictPolicy& kv_evict)
    : engine_(model, window_engine_config(n_ctx, kv_type, kv_window, kv_evict)),
      n_ctx_(n_ctx),
      n_vocab_(model.config().n_vocab) {}

void WindowRunner::begin(const std::vector<int32_t>& tokens, const EvalWindow& w) {
  STRATA_CHECK(static_cast<int64_t>(tokens.size()) <= n_ctx_);
  STRATA_CHECK(w.score_begin >= 0 && w.n_score > 0 &&
               w.score_begin + w.n_score < static_cast<int64_t>(tokens.size()));
  STRATA_CHECK(done_, "the previous window was not finished");
  next_row_ = w.score_begin;
  end_row_ = w.score_begin + w.n_score;
  // Row j's logits come from evaluating token j; tokens after the last scored row are never
  // evaluated (nothing in the window would read their logits).
  RequestParams p;
  p.prompt.assign(tokens.begin(), tokens.begin() + end_row_);
  p.prompt_logits_from = w.score_begin;
  p.kv_evict_at = w.score_begin;  // with eviction on: the context before the scored rows is compacted
  p.stop.max_tokens = 0;
  p.sampling.temperature = 0.0f;
  done_ = false;
  error_.clear();
  pending_ = LogitsChunk{};
  const SubmitResult r = engine_.submit(std::move(p), [this](const EngineEvent& ev) {
    if (ev.n_logits_rows > 0) pending_ = {ev.logits_first_row, ev.n_logits_rows, ev.logits};
    if (ev.finish == FinishReason::Error) error_ = ev.error;
    if (ev.request_done) done_ = true;
  });
  STRATA_CHECK(r.status == SubmitStatus::Accepted);
}

LogitsChunk WindowRunner::next_chunk() {
  pending_ = LogitsChunk{};
  while (pending_.n_rows == 0 && !done_ && engine_.step()) {
  }
  if (!error_.empty()) STRATA_THROW("evaluation failed: ", error_);
  if (pending_.n_rows == 0) return LogitsChunk{};
  STRATA_CHECK(pending_.first_row == next_row_, "prompt logits out of order");
  next_row_ += pending_.n_rows;
  return pending_;
}

}  // namespace strata::eval
