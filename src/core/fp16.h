// IEEE half and bfloat16 <-> float conversions, bit-exact with GGUF/ggml.
//
// All functions are `static inline` on purpose: this header is included by ISA-specific
// translation units (*_avx2.cpp, *_avx512.cpp). Functions with internal linkage cannot be
// merged by the linker with a copy compiled for a wider ISA, which would crash older CPUs.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace strata {

using fp16_t = uint16_t;  // IEEE 754 binary16 bits
using bf16_t = uint16_t;  // bfloat16 bits

static inline float bits_to_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

static inline uint32_t f32_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Exact: every half is representable as a float.
static inline float fp16_to_f32(fp16_t h) {
#if defined(__F16C__)
  return _cvtsh_ss(h);
#endif
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_to_f32(sign | 0x7f800000u | (mant << 13));  // inf / nan
  if (exp == 0) {
    if (mant == 0) return bits_to_f32(sign);
    // Subnormal: normalise the mantissa.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    mant &= 0x3ffu;
    return bits_to_f32(sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | (mant << 13));
  }
  return bits_to_f32(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

// Round to nearest even, overflow to inf, NaN stays NaN (as F16C's vcvtps2ph).
static inline fp16_t f32_to_fp16(float f) {
#if defined(__F16C__)
  return static_cast<fp16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
#endif
  const uint32_t x = f32_to_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return static_cast<fp16_t>(sign | 0x7e00u | ((absx >> 13) & 0x3ffu));
  if (absx >= 0x47800000u) {  // >= 65536 before rounding considerations
    // Values in [65520, 65536) round to inf; handled uniformly below for normal path.
    return static_cast<fp16_t>(sign | 0x7c00u);
  }
  if (absx < 0x38800000u) {  // below smallest normal half (2^-14): subnormal or zero
    if (absx < 0x33000000u) return static_cast<fp16_t>(sign);  // < 2^-25 rounds to zero
    const uint32_t e = absx >> 23;
    const uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // bring to units of 2^-24
    const uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    uint32_t r = q + ((rem > half || (rem == half && (q & 1))) ? 1 : 0);
    return static_cast<fp16_t>(sign | r);
  }
  // Normal: rebias exponent, round mantissa from 23 to 10 bits.
  uint32_t r = absx - 0x38000000u;  // exponent 127 -> 15
  const uint32_t rem = r & 0x1fffu;
  r >>= 13;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) ++r;  // may carry into exponent: correct
  return static_cast<fp16_t>(sign | r);                   // r == 0x7c00 means overflow to inf
}

static inline float bf16_to_f32(bf16_t b) { return bits_to_f32(static_cast<uint32_t>(b) << 16); }

// Round to nearest even; NaN is kept quiet (as ggml's converter).
static inline bf16_t f32_to_bf16(float f) {
  uint32_t u = f32_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<bf16_t>((u >> 16) | 64);
  u += 0x7fffu + ((u >> 16) & 1);
  return static_cast<bf16_t>(u >> 16);
}

}  // namespace strata
