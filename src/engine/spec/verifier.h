// Lossless verification of one drafted token against the target's final distribution p.
//
// - greedy (p has one candidate): accepted iff the draft is p's argmax.
// - deterministic draft (n-gram, suffix, greedy model draft; q is one-hot): the target draws its
//   token exactly as a non-speculative step would (inverse CDF of p at the position's uniform);
//   the draft is accepted iff it is that token. P(accept) = p(d) = min(1, p(d)/1), and a rejection
//   yields p restricted to x != d, renormalized = norm(max(0, p - onehot(d))): this is rejection
//   sampling with a coupled draw, so the output equals non-speculative decoding token for token.
// - sampled draft (d ~ q): accept with probability min(1, p(d)/q(d)); on rejection draw from
//   norm(max(0, p - q)) (Leviathan et al. 2023; Chen et al. 2023).
#pragma once

#include <cstdint>
#include <vector>

#include "sampling/sampler.h"

namespace strata {

struct Verdict {
  int32_t token;  // the token emitted at this position
  bool accepted;  // token == the draft
};

// u_draw, u_accept: the position's independent uniforms in [0, 1). q: the distribution d was
// drawn from, or null for a deterministic draft. scratch: [n_vocab] work space (dense q).
Verdict verify_draft(const TokenDistribution& p, int32_t draft, const TokenDistribution* q, double u_draw,
                     double u_accept, std::vector<float>& scratch);

}  // namespace strata
