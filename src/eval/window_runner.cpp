#include "eval/window_runner.h"

#include <algorithm>
#include <optional>

#include "core/check.h"
#include "core/tensor_type.h"

namespace strata::eval {

WindowRunner::WindowRunner(Model& model, int64_t n_ctx, const KvCacheType& kv_type)
    : session_(model, n_ctx, kv_type), n_vocab_(model.config().n_vocab) {}

void WindowRunner::begin(const std::vector<int32_t>& tokens, const EvalWindow& w) {
  STRATA_CHECK(static_cast<int64_t>(tokens.size()) <= session_.n_ctx());
  STRATA_CHECK(w.score_begin >= 0 && w.n_score > 0 &&
               w.score_begin + w.n_score < static_cast<int64_t>(tokens.size()));
  tokens_ = tokens;
  session_.reset();
  next_row_ = w.score_begin;
  end_row_ = w.score_begin + w.n_score;
  // The prefix only fills the KV cache; its logits are never read. Scored rows start at
  // score_begin, so the prefix is tokens [0, score_begin).
  for (int64_t b = 0; b < next_row_; b += kChunkRows) {
    const int64_t e = std::min(next_row_, b + kChunkRows);
    session_.eval(std::vector<int32_t>(tokens_.begin() + b, tokens_.begin() + e), /*all_logits=*/false);
  }
}

LogitsChunk WindowRunner::next_chunk() {
  LogitsChunk c;
  if (next_row_ >= end_row_) return c;
  // Row j's logits come from evaluating token j; the last token of the window is never
  // evaluated because nothing in the window follows it.
  c.first_row = next_row_;
  c.n_rows = std::min(kChunkRows, end_row_ - next_row_);
  const std::vector<float>& logits = session_.eval(
      std::vector<int32_t>(tokens_.begin() + c.first_row, tokens_.begin() + c.first_row + c.n_rows), true);
  STRATA_CHECK(static_cast<int64_t>(logits.size()) == c.n_rows * n_vocab_);
  c.logits = logits.data();
  next_row_ += c.n_rows;
  return c;
}

}  // namespace strata::eval
