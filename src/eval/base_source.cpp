#include "eval/base_source.h"

#include "core/check.h"
#include "eval/log_softmax.h"

namespace strata::eval {

void ModelBaseSource::begin_window(const std::vector<int32_t>& tokens, const EvalWindow& w) {
  runner_.begin(tokens, w);
  chunk_ = LogitsChunk{};
  row_in_chunk_ = 0;
}

void ModelBaseSource::next_row(int32_t target, BaseRow& row) {
  if (row_in_chunk_ >= chunk_.n_rows) {
    chunk_ = runner_.next_chunk();
    row_in_chunk_ = 0;
    STRATA_CHECK(chunk_.n_rows > 0, "base rows exhausted before the window ended");
  }
  const int64_t n_vocab = runner_.n_vocab();
  const float* logits = chunk_.logits + row_in_chunk_ * n_vocab;  // [n_vocab]
  ++row_in_chunk_;
  log_softmax(logits, n_vocab, row.logp);
  row.nll = -row.logp[static_cast<size_t>(target)];
  row.top1 = argmax(logits, n_vocab);
}

void FileBaseSource::next_row(int32_t target, BaseRow& row) {
  STRATA_CHECK(next_ < reader_.n_rows(), "saved base rows exhausted");
  reader_.read_row(next_++, row);
}

}  // namespace strata::eval
