// A test-only driver of Model::forward for one sequence, with no engine in between: the
// reference the engine's own outputs are compared against, and the direct way model-layer tests
// evaluate logits.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/check.h"
#include "kv/kv_storage.h"
#include "model/forward_batch.h"
#include "model/model.h"

namespace strata::test {

class DirectSession {
 public:
  DirectSession(Model& model, int64_t n_ctx, const KvCacheType& kv_type = {}) : model_(model), n_ctx_(n_ctx) {
    const KvGeometry g = model.kv_geometry(kv_type);
    const auto n_blocks = static_cast<int32_t>((n_ctx + g.block_size - 1) / g.block_size);
    kv_ = std::make_unique<KvStorage>(model.backend(), g, n_blocks);
    for (int32_t b = 0; b < n_blocks; ++b) blocks_.push_back(b);
  }

  // Appends tokens at positions n_past.. and runs them in one batch. Logits: [rows, n_vocab] with
  // rows = tokens.size() when all_logits, else 1 (the last token).
  const std::vector<float>& eval(const std::vector<int32_t>& tokens, bool all_logits = false) {
    STRATA_CHECK(!tokens.empty() && n_past_ + static_cast<int64_t>(tokens.size()) <= n_ctx_);
    ForwardBatch b;
    b.block_tables.push_back(&blocks_);
    for (size_t i = 0; i < tokens.size(); ++i)
      b.add(tokens[i], static_cast<int32_t>(n_past_ + static_cast<int64_t>(i)), 0,
            all_logits || i + 1 == tokens.size());
    logits_.resize(static_cast<size_t>(b.n_outputs() * model_.config().n_vocab));
    model_.forward(b, *kv_, logits_.data());
    n_past_ += static_cast<int64_t>(tokens.size());
    return logits_;
  }
  void reset() { n_past_ = 0; }

 private:
  Model& model_;
  int64_t n_ctx_;
  std::unique_ptr<KvStorage> kv_;
  std::vector<BlockId> blocks_;
  int64_t n_past_ = 0;
  std::vector<float> logits_;
};

}  // namespace strata::test
