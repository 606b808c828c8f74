#include "model/forward_batch.h"

namespace strata {

int64_t ForwardBatch::n_outputs() const {
  int64_t n = 0;
  for (uint8_t w : want_logits) n += w ? 1 : 0;
  return n;
}

int64_t ForwardBatch::n_hidden_outputs() const {
  int64_t n = 0;
  for (uint8_t w : want_hidden) n += w ? 1 : 0;
  return n;
}

void ForwardBatch::add(int32_t token, int32_t position, int32_t seq_index, bool logits, bool hidden) {
  tokens.push_back(token);
  pos.push_back(position);
  seq.push_back(seq_index);
  want_logits.push_back(logits ? 1 : 0);
  want_hidden.push_back(hidden ? 1 : 0);
}

void ForwardBatch::clear() {
  tokens.clear();
  pos.clear();
  seq.clear();
  want_logits.clear();
  want_hidden.clear();
  block_tables.clear();
  rope_pos.clear();
  score_sinks.clear();
  skip_layers = nullptr;
}

}  // namespace strata
