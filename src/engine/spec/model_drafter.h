// Drafting with a second model: a separate draft file with the same vocabulary (draft:FILE), or
// the target itself re-quantized at load to a low-bit type (self:TYPE, QSpec-style). Its K/V
// lives in its own storage under the same block ids as the target's, so the block pool's
// accounting, prefix sharing and copy-on-write cover both.
#pragma once

#include <memory>
#include <unordered_map>

#include "engine/executor.h"
#include "engine/spec/drafter.h"

namespace strata {

class ModelDrafter final : public Drafter {
 public:
  // Loads the draft for `method` (DraftModel or SelfQuant). Throws strata::Error when the file
  // cannot be loaded or its vocabulary differs from the target's.
  ModelDrafter(const DraftMethodSpec& method, Model& target, int32_t block_size, const KvCacheType& kv_type);
  ~ModelDrafter() override;

  const DraftMethodSpec& method() const override { return method_; }
  bool uses_kv() const override { return true; }
  void draft(std::span<DraftSlot* const> slots) override;
  void release(uint64_t seq_id) override { fed_.erase(seq_id); }
  size_t kv_bytes_per_block() const override { return geometry_.bytes_per_block(); }
  void allocate_kv(int32_t n_blocks) override;
  void copy_blocks(const std::vector<BlockCopy>& copies) override;
  double relative_cost() const override { return relative_cost_; }

  const Model& model() const { return *model_; }

 private:
  DraftMethodSpec method_;
  std::unique_ptr<Model> model_;
  KvGeometry geometry_;
  std::unique_ptr<ModelExecutor> executor_;
  double relative_cost_ = 0.0;
  // Per sequence: the tokens whose draft K/V are stored (positions 0..n-1, possibly including
  // drafts that were later rejected: only the common prefix with the sequence is valid).
  std::unordered_map<uint64_t, std::vector<int32_t>> fed_;
};

// Throws strata::Error unless the two tokenizers have the same tokens with the same ids.
void check_same_vocabulary(const Tokenizer& target, const Tokenizer& draft, const std::string& draft_name);

}  // namespace strata
