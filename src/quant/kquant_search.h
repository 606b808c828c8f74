// Super-block searches of the K-quants: sub-block fits, quantization of the sub-block scales
// against an fp16 super-block scale, and joint refinement. The per-type files only pack bits.
#pragma once

#include <cstdint>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/scale_search.h"

namespace strata::quant {

constexpr int kMaxSubBlocks = kQK_K / 16;

// Offset K-quants (Q2_K, Q4_K, Q5_K): x = (d * sc[j]) * L - (dmin * m[j]), L in [0, nmax],
// sc and m in [0, scale_max], d and dmin >= 0.
struct AffineKSpec {
  int sub_size;   // elements per sub-block: 16 or 32
  int nmax;       // 3, 15 or 31
  int scale_max;  // 15 or 63
};
struct AffineKBlock {
  fp16_t d = 0, dmin = 0;
  uint8_t sc[kMaxSubBlocks] = {};
  uint8_t m[kMaxSubBlocks] = {};
  uint8_t L[kQK_K] = {};
};
// x: [256] finite values (sanitize_block); importance: [256] or null.
void quantize_affine_k(const AffineKSpec& spec, const float* x, const float* importance, AffineKBlock* out);

// Symmetric K-quants (Q3_K, Q6_K): x = (d * sc[j]) * L, L in [-neg, pos], sc in [-sc_neg, sc_pos].
struct SymmetricKSpec {
  int sub_size;  // 16
  int neg, pos;
  int sc_neg, sc_pos;
  SearchWindow sub_window;  // window of the per-sub-block exact search
};
struct SymmetricKBlock {
  fp16_t d = 0;
  int8_t sc[kMaxSubBlocks] = {};
  int8_t L[kQK_K] = {};
};
void quantize_symmetric_k(const SymmetricKSpec& spec, const float* x, const float* importance,
                          SymmetricKBlock* out);

}  // namespace strata::quant
