#include "engine/session.h"

#include <algorithm>

#include "core/check.h"

namespace strata {

Session::Session(Model& model, int64_t n_ctx, TensorType kv_type, int32_t max_batched_tokens)
    : model_(model), n_ctx_(n_ctx), max_batched_tokens_(max_batched_tokens), pool_(0) {
  STRATA_CHECK(n_ctx > 0 && max_batched_tokens > 0);
  const KvGeometry g = model.kv_geometry(kv_type);
  const int32_t n_blocks = static_cast<int32_t>((n_ctx + g.block_size - 1) / g.block_size);
  kv_ = std::make_unique<KvStorage>(model.backend(), g, n_blocks);
  pool_ = BlockPool(n_blocks);
  STRATA_CHECK(pool_.allocate(n_blocks, blocks_));
}

const std::vector<float>& Session::eval(const std::vector<int32_t>& tokens, bool all_logits) {
  if (tokens.empty()) STRATA_THROW("nothing to evaluate");
  if (n_past_ + static_cast<int64_t>(tokens.size()) > n_ctx_)
    STRATA_THROW("context overflow: ", n_past_ + static_cast<int64_t>(tokens.size()), " tokens exceed the context of ",
                 n_ctx_);
  const int32_t n_vocab = static_cast<int32_t>(model_.config().n_vocab);
  for (int32_t t : tokens)
    if (t < 0 || t >= n_vocab) STRATA_THROW("token id ", t, " is outside the vocabulary");
  logits_.resize((all_logits ? tokens.size() : 1) * static_cast<size_t>(n_vocab));
  float* out = logits_.data();
  // Passes of at most max_batched_tokens_ tokens, each appending its outputs' logits.
  for (size_t begin = 0; begin < tokens.size(); begin += static_cast<size_t>(max_batched_tokens_)) {
    const size_t end = std::min(tokens.size(), begin + static_cast<size_t>(max_batched_tokens_));
    batch_.clear();
    batch_.block_tables.push_back(&blocks_);
    for (size_t i = begin; i < end; ++i)
      batch_.add(tokens[i], static_cast<int32_t>(n_past_ + static_cast<int64_t>(i)), 0,
                 all_logits || i + 1 == tokens.size());
    model_.forward(batch_, *kv_, out);
    out += static_cast<size_t>(batch_.n_outputs()) * static_cast<size_t>(n_vocab);
  }
  n_past_ += static_cast<int64_t>(tokens.size());
  return logits_;
}

}  // namespace strata
