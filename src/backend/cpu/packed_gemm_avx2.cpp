// AVX2 kernels of the interleaved layout (packed_kernels.h) for CPUs without VNNI, and the AVX2
// activation quantizer of that layout (also used by the AVX-VNNI level).
//
// One ymm register holds the same 4 quants of 8 rows (one half of a 64-byte chunk of a 16-row
// group), so one 4-byte activation broadcast feeds 8 rows. Without vpdpbusd the int8 products
// come from vpmaddubsw (u8 x s8 -> int16 pair sums, saturating) and vpmaddwd (-> int32):
//  - 4/5-bit types (Q4_0, Q4_1, Q5_0, Q5_1): the weights are small unsigned values, so the int16
//    pair sums of several chunks are added in int16 before one vpmaddwd: |pair| <= 2 * 15 * 127
//    = 3810, so all 8 chunks of a Q4 block fit (30480 <= 32767); 5-bit ones (<= 7874) are
//    flushed every 4 chunks. The zero point is removed by the activation's bias (-zp * sum(a)),
//    the integer accumulator's start value, as on AVX-512.
//  - Q8_0, IQ4_NL and IQ4_XS: signed weights up to 8 bits, so the sign trick (|w| * sign(a, w),
//    or |a| * sign(w, a) in decode) keeps the unsigned operand <= 128 and each chunk's int16
//    pairs (<= 32512) go to int32 at once.
//  - MXFP4: the sign trick too, but its values are small (|w| <= 12), so as for Q4_0 a block's
//    int16 pair sums add up before one vpmaddwd.
// IQ4_XS, Q4_K and Q5_K multiply by their integer sub-block scale in the vpmaddwd (pair_scales).
// The integer sums are exact; per block they are scaled by d_w * d_a into float accumulators, one
// FMA per (8 rows, token) and block, in block order: an output's bits do not depend on how many
// tokens or rows share its call (batch invariance, kernels.h). Q4_K, Q5_K and IQ4_XS take
// activations with one scale per super-block (kPackedSuperSums), so their sums (and Q4_K's and
// Q5_K's mins' sums) stay in int32 over the 8 sub-blocks and the float steps run once per 256
// columns (super_block); Q6_K, Q3_K and Q2_K likewise (kPackedSuperHalfSums), their half scales in
// the vpmaddwd.
// Register tiles (16 ymm): 8 rows x up to 4 tokens (int16 + float accumulator per token, the
// unpacked weights and one broadcast), or for one token (decode) 16 rows with prefetching.
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <utility>

#include "backend/cpu/packed_half_scaled_avx2.h"
#include "backend/cpu/packed_kernels.h"
#include "backend/cpu/packed_kind.h"
#include "backend/cpu/packed_scales_avx2.h"
#include "backend/cpu/simd_avx2.h"
#include "core/check.h"
#include "quant/iq_tables.h"

namespace strata::cpu {
namespace {

using namespace packed;

template <Kind K>
constexpr bool kSigned = K == Kind::Q8_0 || kIqLut<K>;  // sign trick, no zero point
// Signed weights small enough (MXFP4: |w| <= 12, so |pair| <= 2 * 12 * 127 = 3048) that a block's
// 8 groups add in int16 (24384 <= 32767) before one vpmaddwd.
template <Kind K>
constexpr bool kSmallSigned = K == Kind::MXFP4;
// Tokens per register tile (8 rows): int16 + int32/float accumulators must fit beside the weights.
template <Kind K>
constexpr int kTileTokens = kHasQh<K> ? 3 : 4;
// Decode: how far ahead of the current block to prefetch. As on AVX-512: 1 KiB ahead left the
// stream short on Zen 5 (2 threads, one 65536 x 2048 GEMV, GB/s at 1 -> 4 KiB: Q4_K 43-44 -> 52-53,
// Q4_0 42-44 -> 52-53, IQ4_XS 35-37 -> 38-42; 8 KiB slower in 5 of 6 rounds; BENCHMARKS.md).
constexpr int kPrefetchBytes = 4096;

static inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// The quants of element group j (elements 4j..4j+3, j = 0..7) of the 8 rows of half h of one
// packed block: unsigned for the 4/5-bit kinds (u = q, 0..31), signed values for Q8_0 / IQ4_NL / IQ4_XS.
// For the 4-bit layouts group j < 4 is the low nibbles of chunk j, group j + 4 its high nibbles.
template <Kind K>
struct Unpacked {
  __m256i lo, hi;  // groups k and k + 4 (4-bit kinds); Q8_0: groups 2k' and 2k' + 1
};

template <Kind K>
static inline Unpacked<K> unpack_pair(const uint8_t* qs, int k, int h) {
  Unpacked<K> u;
  if constexpr (K == Kind::Q8_0) {
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));  // stored as q + 128
    u.lo = _mm256_xor_si256(loadu_256(qs + 64 * (2 * k) + 32 * h), flip);
    u.hi = _mm256_xor_si256(loadu_256(qs + 64 * (2 * k + 1) + 32 * h), flip);
  } else {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i p = loadu_256(qs + 64 * k + 32 * h);
    u.lo = _mm256_and_si256(p, m4);
    u.hi = _mm256_and_si256(_mm256_srli_epi16(p, 4), m4);
    if constexpr (kIqLut<K>) {
      const __m256i table =
          _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lut_values<K>())));
      u.lo = _mm256_shuffle_epi8(table, u.lo);
      u.hi = _mm256_shuffle_epi8(table, u.hi);
    }
    if constexpr (kHasQh<K>) {  // bit 4r+i of mask j: the fifth bit of element 4j+i of row r
      const __m256i b16 = _mm256_set1_epi8(16);
      uint32_t mlo, mhi;
      std::memcpy(&mlo, qs + 256 + 8 * k + 4 * h, 4);
      std::memcpy(&mhi, qs + 256 + 8 * (k + 4) + 4 * h, 4);
      u.lo = _mm256_or_si256(u.lo, _mm256_and_si256(bits_to_bytes(mlo), b16));
      u.hi = _mm256_or_si256(u.hi, _mm256_and_si256(bits_to_bytes(mhi), b16));
    }
  }
  return u;
}

// IQ4_XS, Q4_K and Q5_K put their integer sub-block scale into the integer sums (vpmaddwd by the
// scale instead of by 1), leaving one float scale per super-block row, d: IQ4_XS (sc - 32, signed)
// and Q4_K / Q5_K (sc, 0..63). A sub-block's sums stay exact in int32 and in their float
// conversion (< 2^24: IQ4_XS 32 * 127 * 127 * 32; Q4_K 32 * 15 * 127 * 63; Q5_K 32 * 31 * 127 * 63).
// Sub-block j's scales of half h (8 rows) as vpmaddwd factors: row r's in int16 lanes 2r and
// 2r + 1, the pair sums of its two 2-element halves of a 4-element group.
template <Kind K>
static inline __m256i pair_scales(const uint8_t* w, int j, int h) {
  constexpr size_t kOffset = K == Kind::IQ4_XS ? kIq4xsScOffset : kQ4kScOffset;
  const __m256i sc = _mm256_broadcastq_epi64(
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + kOffset + 16 * j + 8 * h)));
  if constexpr (K == Kind::IQ4_XS) {
    // Byte r into the high byte of lanes 2r, 2r + 1 (rows 0..3 in the low 128 bits, 4..7 in the
    // high), then an arithmetic shift sign-extends it.
    const __m256i to_high = _mm256_setr_epi8(-1, 0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, -1, 3, -1, 3,  //
                                             -1, 4, -1, 4, -1, 5, -1, 5, -1, 6, -1, 6, -1, 7, -1, 7);
    return _mm256_srai_epi16(_mm256_shuffle_epi8(sc, to_high), 8);
  } else {  // unsigned: byte r into the low byte, the high one zero
    const __m256i to_low = _mm256_setr_epi8(0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, -1, 3, -1, 3, -1,  //
                                            4, -1, 4, -1, 5, -1, 5, -1, 6, -1, 6, -1, 7, -1, 7, -1);
    return _mm256_shuffle_epi8(sc, to_low);
  }
}

// Activation group offsets of the two halves of Unpacked pair k.
template <Kind K>
constexpr int lo_group(int k) {
  return K == Kind::Q8_0 ? 2 * k : k;
}
template <Kind K>
constexpr int hi_group(int k) {
  return K == Kind::Q8_0 ? 2 * k + 1 : k + 4;
}

// The exact signed products of one 4-element group pair: vpmaddubsw needs an unsigned operand,
// so one side gives its magnitude and the other takes its signs. One token (decode): |a| once for
// every row half, then one vpsignb per 32 weights (|w| <= 127 in the table kinds, so sign(w, a)
// cannot wrap); several tokens: |w| once for all of them, then sign(a, w) per token (Q8_0's -128
// needs this side: |-128| is 128 only as an unsigned byte).
template <Kind K, int NC>
constexpr bool kActMagnitude = NC == 1 && kIqLut<K>;

// The exact integer dot products of one block for NH halves x NC tokens, added to acc (which
// starts at the bias or zero); mul[h]: the int16 factor of each row's pair sums (ones, or the
// sub-block scales, pair_scales). aq: token 0's 32 quants of this block, tokens 32 bytes apart.
template <Kind K, int NH, int NC>
static inline void block_sums(__m256i (&acc)[NH][NC], const uint8_t* qs, int h0, const int8_t* aq,
                              const __m256i (&mul)[NH]) {
  if constexpr (kSigned<K>) {
    [[maybe_unused]] __m256i s16[NH][NC];  // kSmallSigned: the block's pair sums in int16
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      [[maybe_unused]] __m256i blo, bhi, mlo, mhi;  // kActMagnitude: the token's a and |a|
      if constexpr (kActMagnitude<K, NC>) {
        blo = bcast4(aq + 4 * lo_group<K>(k));
        bhi = bcast4(aq + 4 * hi_group<K>(k));
        mlo = _mm256_abs_epi8(blo);
        mhi = _mm256_abs_epi8(bhi);
      }
#pragma GCC unroll 2
      for (int h = 0; h < NH; ++h) {
        const Unpacked<K> u = unpack_pair<K>(qs, k, h0 + h);
        [[maybe_unused]] __m256i wlo, whi;  // otherwise: |w|
        if constexpr (!kActMagnitude<K, NC>) {
          wlo = _mm256_sign_epi8(u.lo, u.lo);
          whi = _mm256_sign_epi8(u.hi, u.hi);
        }
#pragma GCC unroll 4
        for (int c = 0; c < NC; ++c) {
          __m256i plo, phi;
          if constexpr (kActMagnitude<K, NC>) {
            plo = _mm256_maddubs_epi16(mlo, _mm256_sign_epi8(u.lo, blo));
            phi = _mm256_maddubs_epi16(mhi, _mm256_sign_epi8(u.hi, bhi));
          } else {
            plo = _mm256_maddubs_epi16(wlo, _mm256_sign_epi8(bcast4(aq + 32 * c + 4 * lo_group<K>(k)), u.lo));
            phi = _mm256_maddubs_epi16(whi, _mm256_sign_epi8(bcast4(aq + 32 * c + 4 * hi_group<K>(k)), u.hi));
          }
          if constexpr (kSmallSigned<K>) {
            const __m256i p = _mm256_add_epi16(plo, phi);
            s16[h][c] = k == 0 ? p : _mm256_add_epi16(s16[h][c], p);
          } else {
            acc[h][c] = _mm256_add_epi32(acc[h][c], _mm256_madd_epi16(plo, mul[h]));
            acc[h][c] = _mm256_add_epi32(acc[h][c], _mm256_madd_epi16(phi, mul[h]));
          }
        }
      }
    }
    if constexpr (kSmallSigned<K>) {
#pragma GCC unroll 2
      for (int h = 0; h < NH; ++h)
#pragma GCC unroll 4
        for (int c = 0; c < NC; ++c)
          acc[h][c] = _mm256_add_epi32(acc[h][c], _mm256_madd_epi16(s16[h][c], mul[h]));
    }
  } else {
    // Chunks summed in int16 between flushes: all 4 pairs (8 groups) for 4-bit, 2 pairs for 5-bit.
    constexpr int kPairsPerFlush = kHasQh<K> ? 2 : 4;
#pragma GCC unroll 2
    for (int k0 = 0; k0 < 4; k0 += kPairsPerFlush) {
      __m256i s16[NH][NC];
#pragma GCC unroll 4
      for (int k = k0; k < k0 + kPairsPerFlush; ++k)
#pragma GCC unroll 2
        for (int h = 0; h < NH; ++h) {
          const Unpacked<K> u = unpack_pair<K>(qs, k, h0 + h);
#pragma GCC unroll 4
          for (int c = 0; c < NC; ++c) {
            const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(u.lo, bcast4(aq + 32 * c + 4 * k)),
                                               _mm256_maddubs_epi16(u.hi, bcast4(aq + 32 * c + 16 + 4 * k)));
            s16[h][c] = k == k0 ? p : _mm256_add_epi16(s16[h][c], p);
          }
        }
#pragma GCC unroll 2
      for (int h = 0; h < NH; ++h)
#pragma GCC unroll 4
        for (int c = 0; c < NC; ++c)
          acc[h][c] = _mm256_add_epi32(acc[h][c], _mm256_madd_epi16(s16[h][c], mul[h]));
    }
  }
}

// The int16 pair sums of a 16-column element half's 4 chunks u0..u3 with its activations a[0..15]:
// chunks 0 + 1 in s01, 2 + 3 in s23 (each within 2 * 2 * 63 * 127 for Q6_K's 6-bit quants).
static inline void half_pair_sums(__m256i u0, __m256i u1, __m256i u2, __m256i u3, const int8_t* a,
                                  __m256i& s01, __m256i& s23) {
  s01 = _mm256_add_epi16(_mm256_maddubs_epi16(u0, bcast4(a)), _mm256_maddubs_epi16(u1, bcast4(a + 4)));
  s23 = _mm256_add_epi16(_mm256_maddubs_epi16(u2, bcast4(a + 8)), _mm256_maddubs_epi16(u3, bcast4(a + 12)));
}

// The half-scaled kinds (Q6_K, Q3_K, Q2_K) take kPackedSuperHalfSums activations: their half scales
// go into the vpmaddwd, Q6_K's and Q3_K's zero point (u - 32, u - 4) and Q2_K's mins leave by the
// activation's half sums.

// The scales of element half HH of sub-block j, row half h, as vpmaddwd factors: row r's in int16
// lanes 2r and 2r + 1 (Q6_K, Q3_K: signed bytes; Q2_K: the low nibble of scale | min << 4).
template <Kind K>
static inline __m256i half_scale_pairs(const uint8_t* w, int j, int hh, int h) {
  const __m128i sc8 =
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + kHalfScOffset<K> + 16 * (2 * j + hh) + 8 * h));
  if constexpr (K == Kind::Q2_K)
    return _mm256_and_si256(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(sc8, sc8)), _mm256_set1_epi16(0x0f));
  return _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(sc8, sc8));
}
// Both halves' scales times the zero point z (32 or 4), row r's in int16 lanes 2r (half 0) and
// 2r + 1 (half 1): vpmaddwd by the activation's half sums gives z * (sc_0 * sum(a_0) + sc_1 *
// sum(a_1)), which removes the zero point of u - z (|32 sc| <= 4096 fits int16).
template <Kind K>
static inline __m256i half_zero_point_pairs(const uint8_t* w, int j, int h) {
  static_assert(kHalfZeroPoint<K> == 32 || kHalfZeroPoint<K> == 4);
  constexpr int kShift = kHalfZeroPoint<K> == 32 ? 5 : 2;
  const __m128i s0 =
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + kHalfScOffset<K> + 16 * (2 * j) + 8 * h));
  const __m128i s1 =
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + kHalfScOffset<K> + 16 * (2 * j + 1) + 8 * h));
  return _mm256_slli_epi16(_mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s0, s1)), kShift);
}
// Q2_K's mins (the high nibbles) of sub-block j's two halves, row r's in int16 lanes 2r (half 0)
// and 2r + 1 (half 1): the vpmaddwd partner of the activation's half sums.
static inline __m256i q2k_min_pairs(const uint8_t* w, int j, int h) {
  const __m128i s0 =
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + kQ2kScOffset + 16 * (2 * j) + 8 * h));
  const __m128i s1 =
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + kQ2kScOffset + 16 * (2 * j + 1) + 8 * h));
  return _mm256_srli_epi16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(s0, s1)), 4);
}
// acc[c] -= z * (sc_0 * sum(a_0) + sc_1 * sum(a_1)) of one sub-block (am: token 0's meta).
template <int NC>
static inline void half_zero_point(__m256i (&acc)[NC], __m256i zp, const PackedActMeta* am) {
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c)
    acc[c] = _mm256_sub_epi32(acc[c], _mm256_madd_epi16(zp, _mm256_set1_epi32(am[c].extra)));
}
// Element half HH of a sub-block for one row half and NC tokens: the int16 pair sums of two
// chunks at a time (|s| <= 2 * 2 * 63 * 127) times the half's signed scale (scp,
// half_scale_pairs) added to acc in int32. With half_zero_point per sub-block, acc is the exact
// sum of sc * (u - z) * a: |acc| < 256 * 63 * 128 * 127 * 1.5 < 2^31.
template <int HH, int NC>
static inline void half_super(__m256i (&acc)[NC], __m256i u0, __m256i u1, __m256i u2, __m256i u3, __m256i scp,
                              const int8_t* aq) {
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c) {
    __m256i s01, s23;
    half_pair_sums(u0, u1, u2, u3, aq + 32 * c + 16 * HH, s01, s23);
    acc[c] =
        _mm256_add_epi32(acc[c], _mm256_add_epi32(_mm256_madd_epi16(s01, scp), _mm256_madd_epi16(s23, scp)));
  }
}

// Sub-block j (of the super-block at w) for row half h and NC tokens, its quants q(HH, C).
template <Kind K, int NC, class Quants>
static inline void half_super_sub(__m256i (&acc)[NC], const Quants& q, const uint8_t* w, int j, int h,
                                  const int8_t* aj, const PackedActMeta* mj) {
  half_super<0, NC>(acc, q.template get<0, 0>(), q.template get<0, 1>(), q.template get<0, 2>(),
                    q.template get<0, 3>(), half_scale_pairs<K>(w, j, 0, h), aj);
  half_super<1, NC>(acc, q.template get<1, 0>(), q.template get<1, 1>(), q.template get<1, 2>(),
                    q.template get<1, 3>(), half_scale_pairs<K>(w, j, 1, h), aj);
  if constexpr (kHalfZeroPoint<K> != 0) half_zero_point<NC>(acc, half_zero_point_pairs<K>(w, j, h), mj);
}

// The end of a half-scaled super-block (stored at w) for row half h and NC tokens (am: token 0's
// meta of sub-block 0): acc[c], the exact sum of sc * ((u - z) . a), scaled once by d * d_a; Q2_K's
// mins, sum(min * sum(a)) over its 16 halves in int32 (|.| <= 16 * 15 * 16 * 127), once by -dmin * d_a.
template <Kind K, int NC>
static inline void half_super_epilogue(__m256 (&accf)[NC], const __m256i (&acc)[NC], const uint8_t* w, int h,
                                       const PackedActMeta* am) {
  super_scale<NC>(accf, acc, w, h, am);
  if constexpr (K == Kind::Q2_K) {
    __m256i mins[NC];
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) mins[c] = _mm256_setzero_si256();
    for (int j = 0; j < kSubBlocks<K>; ++j) {
      const __m256i mp = q2k_min_pairs(w, j, h);
#pragma GCC unroll 4
      for (int c = 0; c < NC; ++c)
        mins[c] =
            _mm256_add_epi32(mins[c], _mm256_madd_epi16(mp, _mm256_set1_epi32(am[j * kPackCols + c].extra)));
    }
    const __m256 mdmin = _mm256_sub_ps(_mm256_setzero_ps(), half_to_ps(w + kQ2kDminOffset + 16 * h));
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c)
      accf[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mins[c]), _mm256_mul_ps(mdmin, _mm256_set1_ps(am[c].d)),
                                accf[c]);
  }
}

// A sub-block's quants decoded from the stored block (the decode tile) or read from the panel.
template <Kind K>
struct DecodedQuants {
  const uint8_t* qs;
  int h;
  template <int HH, int C>
  __m256i get() const {
    return half_quants<K, C, HH>(qs, h);
  }
};
struct PanelQuants {
  const HalfPanel& p;
  int64_t s;
  int h;
  template <int HH, int C>
  __m256i get() const {
    return p.quants(s, HH, C, h);
  }
};

// One super-block of a kind with super-block activations (one d_a per 256), row halves
// h0..h0+NH-1: the integer sums of its 8 sub-blocks, then the float steps once, per 256 columns
// instead of per 32.
//  - Q4_K, Q5_K, IQ4_XS (kPackedSuperSums): the sums sc * (u . a) accumulate in int32 (vpmaddwd
//    by the scales); k_super_epilogue adds Q4_K's and Q5_K's mins. |sums| <= 8 * 32 * 31 * 127 *
//    63 (IQ4_XS: 8 * 32 * 127 * 127 * 32) < 2^27.
//  - Q6_K, Q3_K, Q2_K (kPackedSuperHalfSums): half_super_sub per sub-block, its quants decoded
//    here; half_super_epilogue adds Q2_K's mins.
template <Kind K, int NH, int NC>
static inline void super_block(__m256 (&accf)[NH][NC], const uint8_t* w, int h0, const int8_t* aq,
                               const PackedActMeta* am, bool prefetch) {
  __m256i acc[NH][NC];
  set_zero(acc);
  for (int j = 0; j < kSubBlocks<K>; ++j) {
    if (prefetch) prefetch_share<K>(w + kPrefetchBytes, j);  // ahead of the hardware's
    const uint8_t* qs = w + kQsOffset<K> + j * kSubBlockBytes<K>;
    const int8_t* aj = aq + j * kPackCols * 32;
    if constexpr (kHalfScaled<K>) {
#pragma GCC unroll 2
      for (int h = 0; h < NH; ++h)
        half_super_sub<K, NC>(acc[h], DecodedQuants<K>{qs, h0 + h}, w, j, h0 + h, aj, am + j * kPackCols);
    } else {
      __m256i mul[NH];
#pragma GCC unroll 2
      for (int h = 0; h < NH; ++h) mul[h] = pair_scales<K>(w, j, h0 + h);
      block_sums<K, NH, NC>(acc, qs, h0, aj, mul);
    }
  }
#pragma GCC unroll 2
  for (int h = 0; h < NH; ++h) {
    if constexpr (kKScaleMin<K>)
      k_super_epilogue<NC>(accf[h], acc[h], w, h0 + h, am);
    else if constexpr (kHalfScaled<K>)
      half_super_epilogue<K, NC>(accf[h], acc[h], w, h0 + h, am);
    else
      super_scale<NC>(accf[h], acc[h], w, h0 + h, am);
  }
}

// Block j of a 32-column kind (the legacy types, IQ4_NL, MXFP4) for row halves h0..h0+NH-1 and NC
// tokens: its exact integer sums (from the activation's bias for the zero-point kinds), scaled by
// d_w * d_a into accf, plus m_w * s_a for the kinds with a min.
template <Kind K, int NH, int NC>
static inline void sum_block(__m256 (&accf)[NH][NC], const uint8_t* w, int j, int h0, const int8_t* aq,
                             const PackedActMeta* am) {
  const uint8_t* qs = w + kQsOffset<K> + j * kSubBlockBytes<K>;
  __m256i acc[NH][NC], mul[NH];
#pragma GCC unroll 2
  for (int h = 0; h < NH; ++h) {
    mul[h] = _mm256_set1_epi16(1);
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c)
      acc[h][c] = kHasMin<K> || kSigned<K> ? _mm256_setzero_si256() : _mm256_set1_epi32(am[c].extra);
  }
  block_sums<K, NH, NC>(acc, qs, h0, aq, mul);
#pragma GCC unroll 2
  for (int h = 0; h < NH; ++h) scale_block<K, NC>(accf[h], acc[h], w, j, h0 + h, am);
}

// y[c * y_stride + r] for the rows of halves h0..h0+NH-1 (< n_rows) and tokens c < NC of one
// group. aq / am: the tile's first token of this call (token c at +32c / +c). prefetch: this
// call is the group's first pass (decode, or the first tile of several), which streams it.
template <Kind K, int NH, int NC>
[[gnu::always_inline]] inline void tile_body(const uint8_t* w, int64_t nb, const int8_t* aq,
                                             const PackedActMeta* am, int h0, float* y, size_t y_stride,
                                             int n_rows, bool prefetch) {
  __m256 accf[NH][NC];
#pragma GCC unroll 2
  for (int h = 0; h < NH; ++h)
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) accf[h][c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; b += kSubBlocks<K>, w += kBlockBytes<K>) {
    if constexpr (kSuper<K>) {  // Q4_K, Q5_K, IQ4_XS, Q6_K, Q3_K, Q2_K: super-block sums
      super_block<K, NH, NC>(accf, w, h0, aq, am, NC == 1 || prefetch);
      aq += kSubBlocks<K> * kPackCols * 32;
      am += kSubBlocks<K> * kPackCols;
    } else {
      for (int j = 0; j < kSubBlocks<K>; ++j, aq += kPackCols * 32, am += kPackCols) {
        if (NC == 1 || prefetch) prefetch_share<K>(w + kPrefetchBytes, j);  // ahead of the hardware's
        sum_block<K, NH, NC>(accf, w, j, h0, aq, am);
      }
    }
  }
  store_tile<NH, NC>(accf, h0, y, y_stride, n_rows);
}

// The tiles of several tokens are compiled without temporary-expression replacement at RTL
// expansion (-fno-tree-ter): with it GCC 12 emitted a 4-token Q4_0 tile's 32 vpmaddubsw of a
// block ahead of their sums and spilled the products (73 stack accesses in the loop, 20
// without; Q4_K 82 -> 24, IQ4_XS 83 -> 28). The 512-token Q4_0 GEMM on Zen 5 ran 377-409 ->
// 576-615 GOP/s (BENCHMARKS.md, 2026-12-05). The one-token tiles keep the default: without it
// their whole-model Q4_K_M decode ran ~5% slower.
template <Kind K, int NH, int NC>
[[gnu::optimize("no-tree-ter")]] void tile_tokens(const uint8_t* w, int64_t nb, const int8_t* aq,
                                                  const PackedActMeta* am, int h0, float* y, size_t y_stride,
                                                  int n_rows, bool prefetch) {
  tile_body<K, NH, NC>(w, nb, aq, am, h0, y, y_stride, n_rows, prefetch);
}
template <Kind K, int NH>
void tile_one_token(const uint8_t* w, int64_t nb, const int8_t* aq, const PackedActMeta* am, int h0, float* y,
                    size_t y_stride, int n_rows) {
  tile_body<K, NH, 1>(w, nb, aq, am, h0, y, y_stride, n_rows, true);
}
template <Kind K, int NH, int NC>
void tile(const uint8_t* w, int64_t nb, const int8_t* aq, const PackedActMeta* am, int h0, float* y,
          size_t y_stride, int n_rows, bool prefetch) {
  if constexpr (NC == 1)
    tile_one_token<K, NH>(w, nb, aq, am, h0, y, y_stride, n_rows);
  else
    tile_tokens<K, NH, NC>(w, nb, aq, am, h0, y, y_stride, n_rows, prefetch);
}

// tile_body of a half-scaled kind for row half h and NC tokens over a decoded panel: the same
// integer sums and float steps in the same order, so the same bits.
template <Kind K, int NC>
[[gnu::optimize("no-tree-ter")]] void panel_tile(const HalfPanel& p, const uint8_t* w, int64_t nb,
                                                 const int8_t* aq, const PackedActMeta* am, int h, float* y,
                                                 size_t y_stride, int n_rows) {
  __m256 accf[1][NC];
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c) accf[0][c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; b += kSubBlocks<K>, w += kBlockBytes<K>) {  // super_block's steps
    __m256i acc[1][NC];
    set_zero(acc);
    for (int j = 0; j < kSubBlocks<K>; ++j)
      half_super_sub<K, NC>(acc[0], PanelQuants{p, b + j, h}, w, j, h, aq + j * kPackCols * 32,
                            am + j * kPackCols);
    half_super_epilogue<K, NC>(accf[0], acc[0], w, h, am);
    aq += kSubBlocks<K> * kPackCols * 32;
    am += kSubBlocks<K> * kPackCols;
  }
  store_tile<1, NC>(accf, h, y, y_stride, n_rows);
}

// A half-scaled group of several register tiles: decoded once, then each tile over the panel.
template <Kind K>
void half_panel_gemm(const uint8_t* w, int64_t nb, const PackedActTile& a, int nc, float* y, size_t y_stride,
                     int n_rows) {
  thread_local HalfPanel panel;
  const int n_halves = n_rows > 8 ? 2 : 1;
  panel.decode<K, false>(w, nb, n_halves, kPrefetchBytes);
  for_each_token_tile<kTileTokens<K>>(nc, n_halves, [&](auto n, int c0, int h) {
    panel_tile<K, decltype(n)::value>(panel, w, nb, a.qs + 32 * c0, a.meta + c0, h, y + c0 * y_stride,
                                      y_stride, n_rows);
  });
}

// One group x nc tokens: decode (one token) does both halves in one pass; otherwise each half
// in register tiles of kTileTokens tokens.
template <Kind K>
void group_kernel(const uint8_t* w, int64_t nb, const PackedActTile& a, int nc, float* y, size_t y_stride,
                  int n_rows) {
  const int n_halves = n_rows > 8 ? 2 : 1;
  if (nc == 1) {
    if (n_halves == 2)
      tile<K, 2, 1>(w, nb, a.qs, a.meta, 0, y, y_stride, n_rows, true);
    else
      tile<K, 1, 1>(w, nb, a.qs, a.meta, 0, y, y_stride, n_rows, true);
    return;
  }
  if constexpr (kHalfScaled<K>) {
    if (nc > kTileTokens<K>) return half_panel_gemm<K>(w, nb, a, nc, y, y_stride, n_rows);
  }
  for_each_token_tile<kTileTokens<K>>(nc, n_halves, [&](auto n, int c0, int h) {
    const bool first = c0 == 0 && h == 0;  // the pass that brings the group in
    tile<K, 1, decltype(n)::value>(w, nb, a.qs + 32 * c0, a.meta + c0, h, y + c0 * y_stride, y_stride, n_rows,
                                   first);
  });
}

}  // namespace

void packed_gemm_avx2(TensorType type, const uint8_t* w, int64_t nb, const PackedActTile& a, int nc, float* y,
                      size_t y_stride, int n_rows) {
  STRATA_CHECK(nc >= 1 && nc <= kPackCols && n_rows >= 1 && n_rows <= kPackRows);
  with_any_kind(type, [&](auto kind) {
    constexpr Kind K = decltype(kind)::value;
    STRATA_CHECK(a.super_sums == kSuper<K>,
                 "AVX2 packed kernels take super-block activations for exactly the "
                 "super-block kinds (the K-quants and IQ4_XS)");
    group_kernel<K>(w, nb, a, nc, y, y_stride, n_rows);
  });
}

namespace {

// One 32-element block at the reciprocal scale id into q (quants in element order); returns the
// sums of elements 0..15 and 16..31.
inline std::pair<int, int> quantize_block(const float* x, __m256 id, int8_t* q) {
  const __m256i i0 =
      _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x), id));  // MXCSR default: nearest even
  const __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8), id));
  const __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 16), id));
  const __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 24), id));
  // The packs work per 128-bit lane; the permutation restores element order.
  const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
  const __m256i ordered = _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), ordered);
  return {hsum_i32x8(_mm256_add_epi32(i0, i1)), hsum_i32x8(_mm256_add_epi32(i2, i3))};
}

inline __m256 abs_max(const float* x, int n, __m256 amax) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int i = 0; i < n; i += 8) amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
  return amax;
}

}  // namespace

void quantize_packed_act_avx2(const float* x, int64_t n_blocks, int zero_point, int8_t* qs,
                              size_t qs_block_stride, PackedActMeta* meta, size_t meta_block_stride) {
  if (is_super_act_mode(zero_point)) {  // one d per super-block, as the scalar quantizer
    STRATA_CHECK(n_blocks % 8 == 0, "super-block activations take whole super-blocks, not ", n_blocks,
                 " blocks");
    for (int64_t s = 0; s < n_blocks; s += 8, x += 256) {
      const float d = hmax_f32x8(abs_max(x, 256, _mm256_setzero_ps())) / 127.0f;
      const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
      int sums[8], halves[8];
      for (int j = 0; j < 8; ++j) {
        const auto [lo, hi] =
            quantize_block(x + 32 * j, id, qs + static_cast<size_t>(s + j) * qs_block_stride);
        sums[j] = lo + hi;
        halves[j] = pack_half_sums(lo, hi);
      }
      for (int j = 0; j < 8; ++j)
        meta[static_cast<size_t>(s + j) * meta_block_stride] = {
            d, zero_point == kPackedSuperHalfSums ? halves[j] : pack_half_sums(sums[j & ~1], sums[j | 1])};
    }
    return;
  }
  for (int64_t b = 0; b < n_blocks; ++b, x += 32) {
    const float d = hmax_f32x8(abs_max(x, 32, _mm256_setzero_ps())) / 127.0f;
    const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    const auto [sum_lo, sum_hi] = quantize_block(x, id, qs + static_cast<size_t>(b) * qs_block_stride);
    const int sum = sum_lo + sum_hi;
    PackedActMeta& m = meta[static_cast<size_t>(b) * meta_block_stride];
    m.d = _cvtsh_ss(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT));
    m.extra = zero_point == kPackedHalfSums ? pack_half_sums(sum_lo, sum_hi)
              : zero_point != 0             ? -zero_point * sum
                                            : std::bit_cast<int32_t>(_cvtsh_ss(
                                                  _cvtss_sh(d * static_cast<float>(sum), _MM_FROUND_TO_NEAREST_INT)));
  }
}

}  // namespace strata::cpu
