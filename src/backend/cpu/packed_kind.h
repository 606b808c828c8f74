// The packed (interleaved) types as a compile-time parameter of the per-ISA kernels
// (packed_gemm_*.cpp): their layout traits (packed_kernels.h describes the layout) and the one
// switch from a TensorType to a kernel instantiated for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/check.h"
#include "core/tensor_type.h"
#include "quant/iq_tables.h"

namespace strata::cpu::packed {

enum class Kind { Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, Q4_K, Q5_K, IQ4_XS, Q6_K, Q3_K, Q2_K, MXFP4 };

// Super-blocks with a scale per 16-column half of a sub-block: Q6_K, Q3_K (signed scales) and
// Q2_K (4-bit scale and min).
template <Kind K>
constexpr bool kHalfScaled = K == Kind::Q6_K || K == Kind::Q3_K || K == Kind::Q2_K;
// 256-column super-blocks with a scale per 32-column sub-block (kHalfScaled: per 16-column half).
template <Kind K>
constexpr bool kSuper = K == Kind::Q4_K || K == Kind::Q5_K || K == Kind::IQ4_XS || kHalfScaled<K>;
// The zero point of a kHalfScaled kind's unsigned quants (Q6_K: u - 32, Q3_K: u - 4), removed per
// half by the activation's half sums; Q2_K's quants are unsigned (it has a min).
template <Kind K>
constexpr int kHalfZeroPoint = K == Kind::Q6_K   ? 32
                               : K == Kind::Q3_K ? 4
                                                 : 0;
// Super-blocks with a 6-bit scale and min per sub-block (unpacked to bytes).
template <Kind K>
constexpr bool kKScaleMin = K == Kind::Q4_K || K == Kind::Q5_K;
// Nibbles that index a table of signed values: kIq4nlValues, or MXFP4's doubled E2M1 values.
template <Kind K>
constexpr bool kIqLut = K == Kind::IQ4_NL || K == Kind::IQ4_XS || K == Kind::MXFP4;
// The table of a kIqLut kind.
template <Kind K>
inline const int8_t* lut_values() {
  return K == Kind::MXFP4 ? kMxfp4Values : kIq4nlValues;
}

template <Kind K>
constexpr bool kHasMin = K == Kind::Q4_1 || K == Kind::Q5_1 || kKScaleMin<K>;
template <Kind K>
constexpr bool kHasQh = K == Kind::Q5_0 || K == Kind::Q5_1 || K == Kind::Q5_K;
template <Kind K>
constexpr size_t kBlockBytes = K == Kind::Q4_0 || K == Kind::IQ4_NL || K == Kind::MXFP4 ? 288
                               : K == Kind::Q4_1                                        ? 320
                               : K == Kind::Q5_0                                        ? 352
                               : K == Kind::Q5_1                                        ? 384
                               : K == Kind::Q8_0                                        ? 544
                               : K == Kind::Q4_K   ? 2368  // a super-block
                               : K == Kind::Q5_K   ? 2880  // a super-block
                               : K == Kind::IQ4_XS ? 2208  // a super-block
                               : K == Kind::Q3_K   ? 1824  // a super-block
                               : K == Kind::Q2_K   ? 1344  // a super-block
                                                   : 3360;   // Q6_K: a super-block
template <Kind K>
constexpr size_t kQsOffset = kKScaleMin<K>       ? 320
                             : K == Kind::IQ4_XS ? 160
                             : K == Kind::Q6_K   ? 288
                             : K == Kind::Q3_K   ? 288
                             : K == Kind::Q2_K   ? 320
                             : kHasMin<K>        ? 64
                                                 : 32;  // after the scales
// 32-column blocks per stored block (Q4_K stores 256-column super-blocks) and the distance
// between their quants.
template <Kind K>
constexpr int kSubBlocks = kSuper<K> ? 8 : 1;
template <Kind K>
constexpr size_t kSubBlockBytes = K == Kind::Q6_K   ? 384
                                  : K == Kind::Q5_K ? 320
                                  : K == Kind::Q3_K ? 192
                                  : K == Kind::Q2_K ? 128
                                  : kSuper<K>       ? 256
                                                    : 0;
// Q4_K super-block: d[16] fp16 | dmin[16] fp16 | sc[8][16] u8 | m[8][16] u8 | 8 x qs as Q4_0.
constexpr size_t kQ4kDminOffset = 32, kQ4kScOffset = 64, kQ4kMOffset = 192;
// Q5_K super-block: Q4_K's, each sub-block's quants followed by Q5_0's fifth-bit masks.
// IQ4_XS super-block: d[16] fp16 | sc[8][16] i8 (the 6-bit scale - 32) | 8 x qs as IQ4_NL.
constexpr size_t kIq4xsScOffset = 32;
// Q6_K super-block: d[16] fp16 | sc[16][16] i8 (per 16-column half) | 8 x (ql as Q4_0 | qh[2][64]):
// the low 4 bits of each quant as Q4_0's nibbles, the high 2 bits in two 64-byte planes.
constexpr size_t kQ6kScOffset = 32, kQ6kQhOffset = 256;  // qh: from the sub-block's quants
// Q3_K super-block: d[16] fp16 | sc[16][16] i8 (per 16-column half) | 8 x (lo[2][64] | hi[64]):
// the low 2 bits of each quant in two planes (one per element half), the third bit in one.
constexpr size_t kQ3kScOffset = 32, kQ3kHiOffset = 128;  // hi: from the sub-block's quants
// Q2_K super-block: d[16] fp16 | dmin[16] fp16 | sc[16][16] u8 (scale | min << 4, per half) |
// 8 x lo[2][64] as Q3_K's.
constexpr size_t kQ2kDminOffset = 32, kQ2kScOffset = 64;
// A kHalfScaled kind's per-half scale bytes.
template <Kind K>
constexpr size_t kHalfScOffset = K == Kind::Q2_K ? kQ2kScOffset : kQ6kScOffset;

// Sub-block j's share of the prefetches of the stored block at `ahead` (a whole block for the
// kinds without sub-blocks): a line every 64 bytes from the share's start, which touches every
// line of the share (the next share's first address covers the line it ends in). A super-block's
// ~35 lines issued together at its start left decode of the super-block kinds at 0.75-0.88 of
// the read roofline on Zen 5 where Q4_0 was at 0.95 (BM_DecodeRoofline); spread over its 8
// sub-blocks they reach 0.91-0.96. A fixed count, so the loop unrolls and nothing branches.
template <Kind K>
static inline void prefetch_share(const uint8_t* ahead, int j) {
  static_assert(kBlockBytes<K> % kSubBlocks<K> == 0);
  constexpr size_t kShare = kBlockBytes<K> / kSubBlocks<K>;
  const uint8_t* p = ahead + static_cast<size_t>(j) * kShare;
#pragma GCC unroll 9
  for (size_t off = 0; off < kShare; off += 64) __builtin_prefetch(p + off, 0, 3);
}

// Calls f(std::integral_constant<int, N>{}, c0, h) for the register tiles of one group and nc
// tokens: tiles of T tokens (N = T, the last one N = nc - c0) outer, row halves h < n_halves
// inner, so that a tile's weights are still in L1 when the next half or tile comes to them.
template <int T, int N = 1, class F>
static inline void call_tile(int n, int c0, int h, F& f) {
  if constexpr (N < T) {
    if (n != N) return call_tile<T, N + 1>(n, c0, h, f);
  }
  f(std::integral_constant<int, N>{}, c0, h);
}
template <int T, class F>
static inline void for_each_token_tile(int nc, int n_halves, F&& f) {
  for (int c0 = 0; c0 < nc; c0 += T)
    for (int h = 0; h < n_halves; ++h) call_tile<T>(nc - c0 < T ? nc - c0 : T, c0, h, f);
}

// Calls f(std::integral_constant<Kind, K>{}) for type's kind K. `static`: each ISA translation
// unit keeps its own instantiations (DEVELOPERS.md on ISA-specific files).
template <class F>
static inline void with_kind(TensorType type, F&& f) {
  switch (type) {
    case TensorType::Q4_0:
      return f(std::integral_constant<Kind, Kind::Q4_0>{});
    case TensorType::Q4_1:
      return f(std::integral_constant<Kind, Kind::Q4_1>{});
    case TensorType::Q5_0:
      return f(std::integral_constant<Kind, Kind::Q5_0>{});
    case TensorType::Q5_1:
      return f(std::integral_constant<Kind, Kind::Q5_1>{});
    case TensorType::Q8_0:
      return f(std::integral_constant<Kind, Kind::Q8_0>{});
    case TensorType::IQ4_NL:
      return f(std::integral_constant<Kind, Kind::IQ4_NL>{});
    default:
      STRATA_CHECK(false, "type ", type_name(type), " has no interleaved kernel");
  }
}

// with_kind, the super-block kinds (Q4_K, Q5_K, IQ4_XS, Q6_K, Q3_K, Q2_K) and MXFP4: every level
// but AMX's tiles implements them (the AMX level runs the AVX-512 kernel for them).
template <class F>
static inline void with_any_kind(TensorType type, F&& f) {
  if (type == TensorType::Q4_K) return f(std::integral_constant<Kind, Kind::Q4_K>{});
  if (type == TensorType::Q5_K) return f(std::integral_constant<Kind, Kind::Q5_K>{});
  if (type == TensorType::IQ4_XS) return f(std::integral_constant<Kind, Kind::IQ4_XS>{});
  if (type == TensorType::Q6_K) return f(std::integral_constant<Kind, Kind::Q6_K>{});
  if (type == TensorType::Q3_K) return f(std::integral_constant<Kind, Kind::Q3_K>{});
  if (type == TensorType::Q2_K) return f(std::integral_constant<Kind, Kind::Q2_K>{});
  if (type == TensorType::MXFP4) return f(std::integral_constant<Kind, Kind::MXFP4>{});
  with_kind(type, f);
}

}  // namespace strata::cpu::packed
