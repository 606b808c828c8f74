// The ternary fit shared by TQ1_0 and TQ2_0: x ~ d * t with t in {-1, 0, 1} per super-block.
#pragma once

#include <cstdint>

#include "core/fp16.h"

namespace strata::quant {

// x: [256] raw input (sanitized here), importance: [256] or null -> t: [256] in {-1, 0, 1};
// returns the fp16 scale d > 0 (0 for an all-zero block). Candidate thresholds from amax down
// to a third of it, each refitted by least squares, the least weighted error kept.
fp16_t quantize_ternary(const float* x, const float* importance, int8_t* t);

}  // namespace strata::quant
