// Drafting with a second model: a separate draft file with the same vocabulary (draft:FILE), or
// the target itself re-quantized at load to a low-bit type (self:TYPE, QSpec-style). Its K/V
// lives in its own storage under the same block ids as the target's, so the block pool's
// accounting, prefix sharing and copy-on-write cover both.
#pragma once

#include <memory>
#include <unordered_map>

#include "engine/executor.h"
#include "engine/spec/draft_rounds.h"
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
  size_t kv_bytes_per_block() const override { return shares_kv_ ? 0 : geometry_.bytes_per_block(); }
  void allocate_kv(int32_t n_blocks, KvStorage& target_kv) override;
  void copy_blocks(const std::vector<BlockCopy>& copies) override;
  double relative_cost() const override { return relative_cost_; }
  double round_seconds(int64_t n_seqs) const override { return timing_.round_seconds(n_seqs); }
  int64_t lag(uint64_t seq_id, const std::vector<int32_t>& tokens) const override;

  const Model& model() const { return *model_; }
  // True for a self-draft over the target's KV (see SharedKvExecutor): nothing to catch up.
  bool shares_target_kv() const { return shares_kv_; }

 private:
  // Own KV: the draft positions each slot must feed first, and the bookkeeping after drafting.
  std::vector<int64_t> own_kv_starts(std::span<DraftSlot* const> slots);
  void record_fed(std::span<DraftSlot* const> slots, const std::vector<int64_t>& start,
                  const std::vector<int64_t>& n_fed);

  DraftMethodSpec method_;
  std::unique_ptr<Model> model_;
  KvGeometry geometry_;
  // A self-draft has the target's shape: it reads and writes the target's storage (its K/V of
  // accepted positions are the target's, closer to the target than its own would be). Not for
  // KIVI types, whose staging does not expect positions to be written by two models.
  bool shares_kv_ = false;
  std::unique_ptr<Executor> executor_;
  double relative_cost_ = 0.0;
  DraftTiming timing_;
  // Own KV, per sequence: the tokens whose draft K/V are stored (positions 0..n-1, possibly
  // including drafts that were later rejected: only the common prefix with the sequence is
  // valid). The draft's K/V lags the target's while the sequence does not draft and catches up
  // in one batched chunk (capped per step) when it drafts again.
  std::unordered_map<uint64_t, std::vector<int32_t>> fed_;
};

// Throws strata::Error unless the two tokenizers have the same tokens with the same ids.
void check_same_vocabulary(const Tokenizer& target, const Tokenizer& draft, const std::string& draft_name);

}  // namespace strata
