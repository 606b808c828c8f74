// Alignment-free access to the fields of quantized blocks.
//
// Kernels accept rows at any address (a block of 18 or 34 bytes can sit at an odd one when a
// caller packs rows tightly), so block fields are read through memcpy, never through a
// BlockQ*_* pointer whose 2-byte fields may be misaligned. Static inline: safe to include from
// ISA-specific files.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/fp16.h"

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

}  // namespace strata::cpu
