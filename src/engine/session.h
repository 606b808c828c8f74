// One sequence evaluated directly on the model, without a scheduler: for the CLI tools (run,
// logits, bench, perplexity, kld) that process a single stream of tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kv/block_pool.h"
#include "kv/kv_storage.h"
#include "model/model.h"

namespace strata {

class Session {
 public:
  // Reserves KV blocks for n_ctx positions.
  Session(Model& model, int64_t n_ctx, const KvCacheType& kv_type = {});

  int64_t n_ctx() const { return n_ctx_; }
  int64_t n_past() const { return n_past_; }

  // Appends tokens at positions n_past.. and runs them. Returns logits: [n_rows, n_vocab] with
  // n_rows = tokens.size() when all_logits, else 1 (the last token). Throws strata::Error when
  // the context would overflow.
  const std::vector<float>& eval(const std::vector<int32_t>& tokens, bool all_logits = false);
  // Forgets the sequence (positions restart at 0).
  void reset() { n_past_ = 0; }

 private:
  Model& model_;
  int64_t n_ctx_;
  std::unique_ptr<KvStorage> kv_;
  BlockPool pool_;
  std::vector<BlockId> blocks_;
  int64_t n_past_ = 0;
  ForwardBatch batch_;
  std::vector<float> logits_;
};

}  // namespace strata
