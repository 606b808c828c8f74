// The quantizer shared by the 1-3-bit IQ types (IQ3_S, IQ3_XXS, IQ2_XS, IQ2_XXS, IQ2_S, IQ1_S,
// IQ1_M); the per-type files only pack its result into the GGUF block.
//
// Every type decodes a super-block of 256 as x = d * mul * (l + 0.5) * (grid + delta) * sign:
// an fp16 d, a small integer scale l per sub-block (16 or 32 elements), one grid point (4 or 8
// magnitudes, quant/iq_lattice.h) per group, signs per 8 elements (7 bits + even parity, 8
// explicit bits, or none for IQ1, whose grid is signed) and for IQ1 an offset delta = +-1/8.
//
// The search minimises the weighted squared error sum(w (x - x_hat)^2) with
// w = importance * sqrt(sigma2 + x^2), sigma2 = 2 mean(x^2) over the super-block (llama.cpp's
// weighting; importance 1 without an imatrix):
//  1. signs: those of x; where 7 bits + parity leave an odd number of negatives, the element of
//     least w x^2 takes the other sign (its magnitude target becomes -|x|, the lowest level);
//  2. per sub-block, a sweep of scales, each with every group's weighted-nearest grid point and
//     the least-squares scale of those points, then a few refits at the best;
//  3. the super-block scale: candidates around the one that gives the largest sub-block scale the
//     top l, each rounded to fp16; per sub-block the best of the three l nearest its scale, with
//     the grid points re-chosen at the decoded scale; the candidate of least total error wins
//     (d = 0 too, for blocks too small for any fp16 scale).
// Input is sanitized first (NaN -> 0, +-inf -> +-FLT_MAX), and the search runs on x / max|x| so
// that tiny and huge blocks behave alike.
#pragma once

#include <cstdint>

#include "core/fp16.h"
#include "quant/iq_lattice.h"

namespace strata::quant {

enum class IqSigns { Parity7, Explicit8, None };
enum class IqDelta { None, PerSubBlock, PerGroup };

struct IqSpec {
  IqGrid grid;
  int sub_size;        // elements per sub-block scale: 16 or 32
  int n_scale_levels;  // values of l: 16 (4 bits) or 8 (3 bits)
  float scale_mul;     // sub-block scale = d * scale_mul * (l + 0.5)
  IqSigns signs;
  IqDelta delta;
};

struct IqBlock {
  fp16_t d = 0;
  uint8_t l[16] = {};          // [256 / sub_size]
  uint16_t grid[64] = {};      // [256 / dim] grid index per group
  uint8_t sign[32] = {};       // [32] per 8 elements, bit j: element j negative
  uint8_t delta_neg[32] = {};  // [32] per 8 elements: 1 when delta = -1/8 (IQ1)
};

// x: [256] values; importance: [256] or null (invalid or all-zero importance counts as none).
void iq_quantize_block(const IqSpec& spec, const float* x, const float* importance, IqBlock* out);

}  // namespace strata::quant
