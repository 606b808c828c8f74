// Adaptive draft lengths: how many tokens each sequence drafts this step.
//
// Drafts are handed out in moves that each raise the step's expected output tokens per second
// under the measured cost of a step of that many tokens (StepCostModel) plus the drafting: one
// more draft for the q most likely sequences (alpha^(k+1) for a k-th draft, alpha the running
// acceptance rate; the smallest q that pays, since a model drafter's round costs about as much
// for several sequences as for one), else the shortest run of one sequence's drafts that pays.
// When no move pays the choice is made. A memory-bound step takes drafts almost for free; at
// high concurrency the step is compute-bound, each token costs its full share, and the lengths
// shrink to 0 by themselves.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/spec/step_cost_model.h"

namespace strata {

// Acceptance of one sequence's drafts: exponentially decayed counts of accepted drafts and of
// rejections (a round ends at its first rejection), so alpha = P(next draft accepted).
struct SpecAcceptance {
  double accepted = 1.2, rejected = 0.8;  // prior: alpha 0.6 with the weight of two rounds
  double alpha() const { return accepted / (accepted + rejected); }
  // A round that asked for n_asked drafts and got n_accepted accepted (a draft cut short by the
  // drafter ends the round like a rejection).
  void record(int32_t n_asked, int32_t n_accepted);
  // A step without drafting: the evidence fades toward the prior, so a sequence whose drafts
  // stopped paying is probed again after a few dozen steps (text changes character).
  void relax();
  // A model drafter ran for this sequence: whether it proposed anything (its p_min cut-off can
  // stop it at the first token). Each run that proposed nothing doubles the steps the sequence
  // waits before a model drafter is asked again (2, 4, ... 64): a drafter that is never sure
  // on this text costs one draft forward per 64 steps, not one per few steps.
  void model_proposed(bool any);
  // True while the sequence waits (counts the step down).
  bool hold();

  int32_t empty_runs = 0;  // consecutive model-drafter runs without a proposal
  int32_t wait = 0;        // steps left before a model drafter may run again
};

struct SpecCandidate {
  double alpha = 0.0;       // acceptance rate
  double draft_cost = 0.0;  // seconds of drafting one token, for drafters priced per token
  int32_t max_k = 0;        // cap (draft_max, tokens left, context left)
  int32_t k = 0;            // chosen
  // Seconds the first draft costs on top: the (amortized) catch-up of a draft model whose K/V
  // lags the sequence because it did not draft for a while.
  double first_cost = 0.0;
  // Index of the model drafter's round costs in choose()'s `rounds` (-1: priced per token by
  // draft_cost). A model drafter drafts in rounds batched over the sequences: the r-th draft of
  // a sequence costs the growth of round r by one sequence.
  int32_t drafter = -1;
};

// Seconds of one drafting round of a model drafter in which n sequences draft a token each.
using DraftRoundSeconds = std::function<double(int64_t n_seqs)>;

// Seconds a drafting round of n sequences is priced at: what drafting has measured (`measured`,
// 0 before the first rounds), else the weight-byte ratio `relative_cost` of a target step of n
// tokens (`step_n` seconds). The measurement is capped at max(2 x relative_cost, 0.5) target
// steps: a drafter priced out by a few rounds slowed by the machine is not asked again, so
// never measured again, and proposes nothing for the rest of the request (seen: a self:q4_0 run
// at 0% of the drafts it did propose accepted, 1.0 tokens per step, next to runs at 2.8). No
// drafter of the target's vocabulary legitimately costs more than that bound's share of a target
// step of the same tokens.
double draft_round_seconds(double relative_cost, double measured, double step_n);

class SpecController {
 public:
  // cost: the target's step times (null: no cost model, every candidate gets max_k).
  explicit SpecController(const StepCostModel* cost) : cost_(cost) {}
  // base_tokens: tokens of the step before any draft (decodes and prefill chunks); rounds: the
  // round costs of the model drafters the candidates' `drafter` indices name.
  void choose(std::vector<SpecCandidate>& candidates, int64_t base_tokens,
              const std::vector<DraftRoundSeconds>& rounds = {}) const;

 private:
  const StepCostModel* cost_;
};

// While the cost model prices every draft out, only steps without drafts run, so only their size
// is ever observed: an estimate of the multi-token steps that came out too high (a start-up
// calibration step slowed by the machine) would then stand for the whole run and keep drafting
// off (seen: a batch-1 run that drafted nothing, 0.80x of plain decoding, next to runs at 1.6x).
// So every kEvery such steps the most accepting sequence drafts a short run anyway: its step is
// observed (StepCostModel::observe), and the estimate moves to what the machine does now. Where
// drafting really does not pay, that costs a few tokens' work once in kEvery steps. Only small
// steps (at most kMaxBase tokens before drafts) probe: the sizes just above a larger step are
// observed anyway as the batch changes, and there a probe's draft rounds and extra tokens are
// pure cost (seen: 64 streams 0.92-0.94x of plain with nothing drafted but probes; at 4 streams a
// probe is three ~13 ms draft rounds and 3 more verified tokens once in 32 steps of ~50 ms).
class PricedOutProbe {
 public:
  static constexpr int32_t kEvery = 32;
  static constexpr int32_t kLength = 3;  // a 4-token step at batch 1, a calibrated size
  static constexpr int64_t kMaxBase = 2;
  // After SpecController::choose: counts a step of at most kMaxBase base tokens in which no
  // candidate got a draft, and on every kEvery-th gives the candidate of highest acceptance a
  // run of kLength (at most its max_k). True when it did.
  bool apply(std::vector<SpecCandidate>& candidates, int64_t base_tokens);

 private:
  int32_t steps_ = 0;  // consecutive steps in which every draft was priced out
};

}  // namespace strata
