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
#include "engine/spec/step_cost_model.h"

namespace strata {

// Seconds of a drafting round by the number of sequences drafting in it (each feeds one token):
// what drafting really costs. The weight-byte ratio of relative_cost() underestimates it (a
// low-bit draft is not purely memory-bound, and every forward pays the same fixed overheads),
// and a per-token mean would be wrong the other way: a round of four sequences costs about what
// a round of one does, so a draft for one sequence costs a whole round where the others draft
// nothing that deep. Catch-up rounds are not drafting costs and are not timed.
class DraftTiming {
 public:
  void observe(int64_t n_seqs, double seconds);
  // Estimated seconds of a round of n sequences; 0 before the first timed round.
  double round_seconds(int64_t n_seqs) const { return rounds_.empty() ? 0.0 : rounds_.seconds(n_seqs); }

 private:
  // By round size, like the target's step cost (a round slower than the estimate, the machine
  // busy, moves it a fifth as fast as a faster one, and counts as at most 3x the estimate). The
  // first round is a warm-up (first touch of the draft's buffers) and not counted.
  StepCostModel rounds_;
  bool warm_ = false;
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
