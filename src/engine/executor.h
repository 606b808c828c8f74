// The model-runner seam between the scheduler and a model: the engine hands an executor the
// block copies and the ragged batch of one step and gets the wanted logits rows back. Today's
// executor runs a Model on the CPU backend over its own KV storage; a draft model is a second
// executor over the same block ids, and a second process or a GPU can sit behind this
// interface later.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "kv/kv_storage.h"
#include "model/forward_batch.h"
#include "model/model.h"

namespace strata {

class Executor {
 public:
  virtual ~Executor() = default;
  virtual const ModelConfig& config() const = 0;
  // KV memory of one block (all layers, K and V).
  virtual size_t kv_bytes_per_block() const = 0;
  // Copies blocks (copy-on-write of shared blocks), then runs the batch: writes its K/V and
  // returns the logits of the rows with want_logits, in batch order: [n_outputs, n_vocab],
  // valid until the next call.
  virtual const float* execute(const std::vector<BlockCopy>& copies, const ForwardBatch& batch) = 0;
  // The final hidden states of the rows with want_hidden of the last execute, in batch order:
  // [n_hidden_outputs, n_embd] (embedding requests pool them), valid until the next call.
  virtual const float* hidden() const = 0;
  // Score-based eviction: runs moves[il] (in order) on layer il's cache, every layer.
  virtual void move_kv_tokens(const std::vector<std::vector<KvTokenMove>>& moves) {
    (void)moves;
    STRATA_THROW("this executor cannot compact its KV cache");
  }
};

// A Model on its backend, with KV storage for n_blocks blocks.
class ModelExecutor final : public Executor {
 public:
  ModelExecutor(Model& model, const KvGeometry& geometry, int32_t n_blocks);

  const ModelConfig& config() const override { return model_.config(); }
  size_t kv_bytes_per_block() const override { return kv_.geometry().bytes_per_block(); }
  const float* execute(const std::vector<BlockCopy>& copies, const ForwardBatch& batch) override;
  const float* hidden() const override { return hidden_.data(); }
  void move_kv_tokens(const std::vector<std::vector<KvTokenMove>>& moves) override;

  Model& model() { return model_; }
  const KvStorage& kv() const { return kv_; }
  KvStorage& kv() { return kv_; }  // the offload tiers copy blocks in and out

 private:
  Model& model_;
  KvStorage kv_;
  std::vector<float> logits_;  // [n_outputs, n_vocab]
  std::vector<float> hidden_;  // [n_hidden_outputs, n_embd]
};

// A model over another executor's KV storage (the self-draft over the target's cache). It
// attends to the target's K/V of every accepted position and writes its own only at positions
// the target overwrites in the same step (the verification chunk), so it needs no storage, no
// copy-on-write and no catch-up of its own. Block copies are the owner's job.
class SharedKvExecutor final : public Executor {
 public:
  // `kv` must have the geometry model.kv_geometry() gives for it, and outlive the executor.
  SharedKvExecutor(Model& model, KvStorage& kv);

  const ModelConfig& config() const override { return model_.config(); }
  size_t kv_bytes_per_block() const override { return 0; }
  const float* execute(const std::vector<BlockCopy>& copies, const ForwardBatch& batch) override;
  const float* hidden() const override { return hidden_.data(); }

 private:
  Model& model_;
  KvStorage& kv_;
  std::vector<float> logits_;  // [n_outputs, n_vocab]
  std::vector<float> hidden_;  // [n_hidden_outputs, n_embd]
};

}  // namespace strata
