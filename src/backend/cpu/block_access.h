// Alignment-free access to the fields of quantized blocks.
//
// Kernels accept rows at any address (a block of 18 or 34 bytes can sit at an odd one when a
// caller packs rows tightly), so block fields are read through memcpy, never through a
// BlockQ*_* pointer whose 2-byte fields may be misaligned. Static inline: safe to include from
// ISA-specific files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"

namespace strata::cpu {

static inline float load_half(const uint8_t* p) {
  fp16_t h;
  std::memcpy(&h, p, sizeof h);
  return fp16_to_f32(h);
}

static inline void store_half(uint8_t* p, float v) {
  const fp16_t h = f32_to_fp16(v);
  std::memcpy(p, &h, sizeof h);
}

static inline float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

static inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Super-block b of NC Q8_K activation rows (row c at a + c * as): each row's quants and scale.
template <int NC>
static inline void q8_k_columns(const uint8_t* a, size_t as, int64_t b, const uint8_t* (&qs)[NC],
                                float (&d)[NC]) {
#pragma GCC unroll 8
  for (int c = 0; c < NC; ++c) {
    const uint8_t* blk = a + c * as + b * sizeof(BlockQ8_K);
    d[c] = load_f32(blk + offsetof(BlockQ8_K, d));
    qs[c] = blk + offsetof(BlockQ8_K, qs);
  }
}

}  // namespace strata::cpu
