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

// Seconds per drafted token, a decayed mean over the draft rounds that fed one token per drafting
// sequence (a catch-up round is not a drafting cost): what a draft token really costs, which the
// weight-byte ratio of relative_cost() underestimates (a low-bit draft is not purely
// memory-bound, and every forward pays the same fixed overheads).
class DraftTiming {
 public:
  void observe(int64_t n_tokens, double seconds);
  double seconds_per_token() const { return n_ > 1 ? mean_ : 0.0; }

 private:
  double mean_ = 0.0;
  // Rounds seen. The first is a warm-up (first touch of the draft's buffers) and not counted;
  // the next ones are averaged evenly, and a round far slower than the mean (the machine was
  // busy) counts as 3x the mean: a drafter priced out by one slow round would never be asked
  // again, so never measured again.
  int64_t n_ = 0;
};

struct DraftRoundsInput {
  Executor* executor = nullptr;  // the draft model's (or the target's, layer-skipped)
  const std::vector<uint8_t>* skip_layers = nullptr;
  int32_t n_vocab = 0;
  int64_t max_catch_up = 512;     // tokens of round 0 per step, over all sequences
  DraftTiming* timing = nullptr;  // if set, the drafting rounds are timed into it
};

// start[i]: first position slots[i] feeds (its draft K/V holds [0, start[i])). Returns for each
// slot the number of tokens fed (its draft K/V now covers [0, start[i] + fed[i])).
std::vector<int64_t> run_draft_rounds(const DraftRoundsInput& in, std::span<DraftSlot* const> slots,
                                      const std::vector<int64_t>& start);

}  // namespace strata
