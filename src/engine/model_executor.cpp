#include "core/check.h"
#include "engine/executor.h"

namespace strata {

ModelExecutor::ModelExecutor(Model& model, const KvGeometry& geometry, int32_t n_blocks)
    : model_(model), kv_(model.backend(), geometry, n_blocks) {}

const float* ModelExecutor::execute(const std::vector<BlockCopy>& copies, const ForwardBatch& batch) {
  for (const BlockCopy& c : copies)
    for (int32_t il = 0; il < kv_.geometry().n_layer; ++il)
      model_.backend().copy_kv_block(kv_.layer(il), c.src, c.dst);
  logits_.resize(static_cast<size_t>(batch.n_outputs() * model_.config().n_vocab));
  hidden_.resize(static_cast<size_t>(batch.n_hidden_outputs() * model_.config().n_embd));
  if (batch.n_tokens() > 0)
    model_.forward(batch, kv_, logits_.data(), hidden_.empty() ? nullptr : hidden_.data());
  return logits_.data();
}

SharedKvExecutor::SharedKvExecutor(Model& model, KvStorage& kv) : model_(model), kv_(kv) {}

const float* SharedKvExecutor::execute(const std::vector<BlockCopy>& copies, const ForwardBatch& batch) {
  STRATA_CHECK(copies.empty(), "a shared-KV executor does not copy blocks: the owner of the storage does");
  logits_.resize(static_cast<size_t>(batch.n_outputs() * model_.config().n_vocab));
  hidden_.resize(static_cast<size_t>(batch.n_hidden_outputs() * model_.config().n_embd));
  if (batch.n_tokens() > 0)
    model_.forward(batch, kv_, logits_.data(), hidden_.empty() ? nullptr : hidden_.data());
  return logits_.data();
}

void ModelExecutor::move_kv_tokens(const std::vector<std::vector<KvTokenMove>>& moves) {
  STRATA_CHECK(moves.size() == static_cast<size_t>(kv_.geometry().n_layer));
  for (int32_t il = 0; il < kv_.geometry().n_layer; ++il) {
    const auto& m = moves[static_cast<size_t>(il)];
    model_.backend().move_kv_tokens(kv_.layer(il), m.data(), static_cast<int64_t>(m.size()));
  }
}

}  // namespace strata
