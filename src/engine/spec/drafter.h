// A drafter proposes the next tokens of a sequence for the target model to verify in one step.
// Cheap drafters (n-gram, suffix) only look at tokens and propose before the step is scheduled;
// model drafters (a draft model, the re-quantized or layer-skipping target) run forward passes
// over the sequence's KV blocks and propose after the scheduler has reserved them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/spec/spec_config.h"
#include "kv/kv_cache_manager.h"
#include "kv/kv_storage.h"
#include "sampling/sampler.h"
#include "sampling/token_constraint.h"

namespace strata {

// One sequence asking for drafts this step.
struct DraftSlot {
  uint64_t seq_id = 0;                           // stable while the sequence lives (drafter state key)
  const std::vector<int32_t>* tokens = nullptr;  // prompt + accepted output; the last is not computed
  int64_t n_prompt = 0;
  const std::vector<BlockId>* blocks = nullptr;  // covers positions < tokens->size() + max_draft
  Sampler* sampler = nullptr;                    // the sequence's sampler (penalties, seed, temperature)
  TokenConstraint* constraint = nullptr;         // structured output, or null
  const std::string* partition = nullptr;        // cross-request cache partition
  int32_t max_draft = 0;
  float p_min = 0.0f;  // model drafters stop below this top-token probability
  // Results: at most max_draft tokens, and for a sampled draft (temperature > 0) the distribution
  // each token was drawn from; q is empty when the draft is deterministic.
  std::vector<int32_t> draft;
  std::vector<TokenDistribution> q;
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  virtual const DraftMethodSpec& method() const = 0;
  // True for model drafters: they write their own K/V into the sequence's blocks, so they
  // draft after the step's blocks are reserved.
  virtual bool uses_kv() const = 0;
  // Fills slot->draft (and q) for every slot; may leave a draft empty.
  virtual void draft(std::span<DraftSlot* const> slots) = 0;
  // The sequence is gone or lost its blocks (finished, aborted, preempted).
  virtual void release(uint64_t seq_id) { (void)seq_id; }
  // A finished sequence's tokens, for cross-request caches.
  virtual void observe_finished(const std::string& partition, const std::vector<int32_t>& tokens,
                                int64_t n_prompt) {
    (void)partition, (void)tokens, (void)n_prompt;
  }
  // Model drafters keep their K/V in the same block ids as the target: bytes per block, the
  // storage allocation once the pool size is known (or the use of the target's own storage,
  // target_kv, for a self-draft of the same shape), and copy-on-write of blocks.
  virtual size_t kv_bytes_per_block() const { return 0; }
  virtual void allocate_kv(int32_t n_blocks, KvStorage& target_kv) { (void)n_blocks, (void)target_kv; }
  virtual void copy_blocks(const std::vector<BlockCopy>& copies) { (void)copies; }
  // Tokens of the sequence the drafter must feed before its first draft (its own K/V lags the
  // sequence's while it does not draft; the last token is always fed and not counted).
  virtual int64_t lag(uint64_t seq_id, const std::vector<int32_t>& tokens) const {
    (void)seq_id, (void)tokens;
    return 0;
  }
  // Relative cost of drafting one token of one sequence, in units of one target decode token
  // (0 for cheap drafters): the adaptive controller weighs it against the acceptance.
  virtual double relative_cost() const { return 0.0; }
  // Measured seconds of a drafting round in which n sequences draft one token each (0: nothing
  // measured yet; the controller then prices a round as relative_cost() target steps of n tokens).
  virtual double round_seconds(int64_t n_seqs) const {
    (void)n_seqs;
    return 0.0;
  }
};

}  // namespace strata
