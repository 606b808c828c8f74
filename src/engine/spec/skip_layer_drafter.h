// Layer-skipping self-drafting (SWIFT-style, training-free): the target itself, run with some
// layers skipped, drafts for the target. It reads the target's own K/V for the accepted tokens
// and writes its approximate K/V only at the positions the verification pass then overwrites,
// so it needs no cache of its own. skip:auto picks the layers from a short calibration: each
// layer's effect on the target's argmax when skipped alone, then the best number of the least
// important layers by expected speed-up.
#pragma once

#include "engine/executor.h"
#include "engine/spec/draft_rounds.h"
#include "engine/spec/drafter.h"

namespace strata {

class SkipLayerDrafter final : public Drafter {
 public:
  // method.arg: "auto" or 0-based layer numbers "3,5,7". calibration: tokens for "auto" (empty:
  // the first prompt drafted for). Throws strata::Error for a bad layer list.
  SkipLayerDrafter(const DraftMethodSpec& method, ModelExecutor& target, std::vector<int32_t> calibration,
                   int32_t draft_max);

  const DraftMethodSpec& method() const override { return method_; }
  bool uses_kv() const override { return true; }
  void draft(std::span<DraftSlot* const> slots) override;
  double relative_cost() const override;
  double round_seconds(int64_t n_seqs) const override { return timing_.round_seconds(n_seqs); }

  // [n_layer] 1 = skipped (empty until calibrated).
  const std::vector<uint8_t>& skipped() const { return skip_; }

 private:
  void calibrate(const std::vector<int32_t>& tokens);

  DraftMethodSpec method_;
  ModelExecutor& target_;
  std::vector<int32_t> calibration_;
  int32_t draft_max_;
  std::vector<uint8_t> skip_;
  DraftTiming timing_;
};

// Expected speed-up of drafting with acceptance alpha at relative draft cost c per token, with
// the best draft length up to k_max: max_k E[tokens](k) / (1 + k c).
double expected_speedup(double alpha, double cost, int32_t k_max);

}  // namespace strata
