#include "engine/session.h"

#include "core/check.h"

namespace strata {

Session::Session(Model& model, int64_t n_ctx, const KvCacheType& kv_type)
    : model_(model), n_ctx_(n_ctx), pool_(0) {
  STRATA_CHECK(n_ctx > 0);
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
  batch_.clear();
  batch_.block_tables.push_back(&blocks_);
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= n_vocab) STRATA_THROW("token id ", tokens[i], " is outside the vocabulary");
    batch_.add(tokens[i], static_cast<int32_t>(n_past_ + static_cast<int64_t>(i)), 0,
               all_logits || i + 1 == tokens.size());
  }
  logits_.resize(static_cast<size_t>(batch_.n_outputs()) * static_cast<size_t>(n_vocab));
  model_.forward(batch_, *kv_, logits_.data());
  n_past_ += static_cast<int64_t>(tokens.size());
  return logits_;
}

}  // namespace strata
