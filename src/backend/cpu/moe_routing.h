// MoE routing on the CPU: each token's top-k experts and their weights (backend.h MoeRouting).
// A handful of experts per token: plain scalar code, the same on every ISA level.
#pragma once

#include <cstdint>

#include "backend/backend.h"

namespace strata::cpu {

// Routes one token. logits: [r.n_experts]; ids, weights: [r.n_used], best first (ties: lower
// expert index first). Checks the routing parameters (STRATA_CHECK).
void route_token(const float* logits, const MoeRouting& r, int32_t* ids, float* weights);

}  // namespace strata::cpu
