// Autoregressive drafting with a model, batched over sequences: round 0 feeds each sequence the
// tokens its draft K/V is missing (at least the last accepted token) and drafts one token from
// the last row; every further round feeds each still-drafting sequence its previous draft. A
// sequence stops at max_draft tokens or when the draft's top-token probability falls below p_min.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/executor.h"
#include "engine/spec/drafter.h"

namespace strata {

struct DraftRoundsInput {
  Executor* executor = nullptr;  // the draft model's (or the target's, layer-skipped)
  const std::vector<uint8_t>* skip_layers = nullptr;
  int32_t n_vocab = 0;
  int64_t max_catch_up = 512;  // tokens of round 0 per step, over all sequences
};

// start[i]: first position slots[i] feeds (its draft K/V holds [0, start[i])). Returns for each
// slot the number of tokens fed (its draft K/V now covers [0, start[i] + fed[i])).
std::vector<int64_t> run_draft_rounds(const DraftRoundsInput& in, std::span<DraftSlot* const> slots,
                                      const std::vector<int64_t>& start);

}  // namespace strata
