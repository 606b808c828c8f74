// The scalar reference dot product of the IQ and ternary types against Q8_K activations, generic
// over a per-type decoder. Every such super-block of 256 decodes to exact integers:
//   x[e] = f * sc[e / 16] * w[e]
// with w int8 (|w| <= 127), sc a small integer per 16 elements and f one float per super-block
// (e.g. IQ2_XXS: f = d / 8, sc = 2 s + 1, w = grid * sign). The dot is then one integer sum per
// super-block times f * d_a, as the SIMD kernels compute it. Internal linkage (scalar files only).
#pragma once

#include <cstdint>
#include <cstring>

#include "quant/blocks.h"

namespace strata::cpu {
namespace {

// Decode: float (*)(const uint8_t* blk, int8_t* w /* [256] */, int* sc /* [16] */).
template <size_t kBlockBytes, float (*Decode)(const uint8_t*, int8_t*, int*)>
float iq_vec_dot(int64_t n, const void* w, const void* a) {  // w: [n / 256] blocks, a: [n / 256] Q8_K
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* ap = static_cast<const uint8_t*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    BlockQ8_K act;
    std::memcpy(&act, ap + b * sizeof(BlockQ8_K), sizeof act);
    int8_t q[kQK_K];
    int sc[kQK_K / 16];
    const float f = Decode(wp + b * kBlockBytes, q, sc);
    int32_t sumi = 0;
    for (int h = 0; h < kQK_K / 16; ++h) {
      int32_t part = 0;
      for (int e = 16 * h; e < 16 * h + 16; ++e) part += q[e] * act.qs[e];
      sumi += sc[h] * part;
    }
    sum += f * act.d * static_cast<float>(sumi);
  }
  return sum;
}

// The magnitudes of grid entry g (one per byte, element 0 lowest) with the signs of bits: w: [count].
static inline void apply_grid(uint64_t g, uint8_t signs, int count, int8_t* w) {
  for (int j = 0; j < count; ++j) {
    const int v = static_cast<int>((g >> (8 * j)) & 0xFF);
    w[j] = static_cast<int8_t>((signs >> j) & 1 ? -v : v);
  }
}

}  // namespace
}  // namespace strata::cpu
