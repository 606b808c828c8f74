// The register tile of the IQ and ternary types against Q8_K activations, generic over a
// block-format Ops class (dot_<type>_simd.h). 256-bit integer code: compiled into the AVX2 files
// and, with the wider ISA's encodings and registers, the AVX-512 ones. Internal linkage.
//
// Each super-block of 256 is 8 chunks of 32 elements; a chunk decodes to exact integers
// (iq_scalar_dot.h): x = f * sc * w with w int8 (|w| <= 127) in element order and sc one int16 per
// element pair. Per chunk, row and token: vpmaddubsw(|w|, sign(a, w)) (pair sums, no saturation
// since 2 * 127 * 127 < 32768), vpmaddwd with sc into int32 lanes; once per super-block the int32
// sums are scaled by f * d_a into a float accumulator. Each output's operations do not depend on
// the tile shape or its place in it (batch invariance, kernels.h).
//
// Ops provides:
//   kBlockBytes                      bytes of one weight super-block
//   Row, load_row(blk)               what a super-block's chunks need; Row::f the float factor
//   chunk(row, k, &w, &sc)           chunk k (0..7): w: int8 x 32, sc: int16 x 16 (lane i scales
//                                    elements 2i, 2i + 1)
// or, for the grid types whose values are a magnitude and a sign (IQ2_*, IQ3_*), instead of chunk:
//   chunk_parts(row, k, &mag, &signs, &sc)   w = mag * signs, mag >= 0, signs +1 / -1 bytes
// Then the tile signs the activation, vpmaddubsw(mag, sign(a, signs)): one vpsignb per row and
// token instead of three (w, |w| and sign(a, w)).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/block_access.h"
#include "backend/cpu/simd_avx2.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace strata::cpu {
namespace {

// The loop over super-blocks shared by the 256-bit IQ tiles: Kernel provides kBlockBytes, Row,
// load_row(blk) (Row::f the float factor) and block<NR, NC>(rows, aq, acc), which sets the int32
// lanes acc[r][c] to the super-block's integer dot products (aq[c]: the 256 int8 of column c).
// out[c * os + r] = dot(w row r, a row c) for NR x NC; w: [n / 256] blocks, a: [n / 256] Q8_K.
template <class Kernel, int NR, int NC>
static inline void iq_tile_run(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as,
                               float* out, size_t os) {
  __m256 accf[NR][NC];
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < NC; ++c) accf[r][c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
#if defined(__AVX512F__)
    // Batched decode streams the rows too: at AVX-512 the tiles of several tokens prefetch as
    // well (IQ3_S, 16 sequences, Zen 5: 48-50 -> 55-57 t/s, prefill unchanged). The AVX2 build
    // does not: there the same prefetches cost 8-12%, prefill included.
    prefetch_next_rows<NR>(w + b * Kernel::kBlockBytes, ws, Kernel::kBlockBytes);
#else
    if constexpr (NC == 1) prefetch_next_rows<NR>(w + b * Kernel::kBlockBytes, ws, Kernel::kBlockBytes);
#endif
    typename Kernel::Row rows[NR];
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) rows[r] = Kernel::load_row(w + r * ws + b * Kernel::kBlockBytes);
    const uint8_t* aq[NC];
    float da[NC];
    q8_k_columns<NC>(a, as, b, aq, da);
    __m256i acc[NR][NC];
    Kernel::template block<NR, NC>(rows, aq, acc);
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
      for (int c = 0; c < NC; ++c)
        accf[r][c] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r][c]), _mm256_set1_ps(rows[r].f * da[c]), accf[r][c]);
  }
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < NC; ++c) out[c * os + r] = hsum_f32x8(accf[r][c]);
}

// A chunk's signs (chunk_parts): 32 bytes of +1 / -1 for vpsignb; at AVX-512 the mask of its
// negative elements for one masked subtract, which spares building the bytes: IQ2_S and IQ3_S
// store that mask as it is, and the 7-bit fields of IQ2_XXS, IQ2_XS and IQ3_XXS need only their
// parities (signs7). Either way x * s wraps -128 as vpsignb does, so the integers are the same.
#if defined(__AVX512F__)
using IqSigns = __mmask32;
static inline __m256i apply_signs(__m256i x, IqSigns s) {
  return _mm256_mask_sub_epi8(x, s, _mm256_setzero_si256(), x);
}
#else
using IqSigns = __m256i;
static inline __m256i apply_signs(__m256i x, IqSigns s) {
  return _mm256_sign_epi8(x, s);
}
#endif

template <class Ops>
concept IqSignParts = requires(const typename Ops::Row& row, __m256i& v, IqSigns& s) {
  Ops::chunk_parts(row, 0, v, s, v);
};

// Chunk k of a row as signed values and pair scales, from either form of Ops.
template <class Ops>
static inline void iq_chunk(const typename Ops::Row& row, int k, __m256i& w, __m256i& sc) {
  if constexpr (IqSignParts<Ops>) {
    __m256i mag;
    IqSigns signs;
    Ops::chunk_parts(row, k, mag, signs, sc);
    w = apply_signs(mag, signs);
  } else {
    Ops::chunk(row, k, w, sc);
  }
}

// What the tile kernels over an Ops share: its block size and row decoder, and the loop over
// super-blocks (iq_tile_run) around Tile's block().
template <class Ops, class Tile>
struct IqTileBase {
  static constexpr size_t kBlockBytes = Ops::kBlockBytes;
  using Row = typename Ops::Row;
  static Row load_row(const uint8_t* blk) { return Ops::load_row(blk); }

  template <int NR, int NC>
  static void run(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, float* out,
                  size_t os) {
    iq_tile_run<Tile, NR, NC>(n, w, ws, a, as, out, os);
  }
};

template <class Ops>
struct IqTileAvx2 : IqTileBase<Ops, IqTileAvx2<Ops>> {
  using Row = typename Ops::Row;

  // One super-block, chunk by chunk (see the top of this file).
  template <int NR, int NC>
  static inline void block(const Row* rows, const uint8_t* const* aq, __m256i (&acc)[NR][NC]) {
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) {
        __m256i mag, sc, y[NC];  // y: the activation with the weights' signs
        if constexpr (IqSignParts<Ops>) {
          IqSigns signs;
          Ops::chunk_parts(rows[r], k, mag, signs, sc);
#pragma GCC unroll 8
          for (int c = 0; c < NC; ++c) y[c] = apply_signs(loadu_256(aq[c] + 32 * k), signs);
        } else {
          __m256i w;
          Ops::chunk(rows[r], k, w, sc);
          mag = _mm256_sign_epi8(w, w);
#pragma GCC unroll 8
          for (int c = 0; c < NC; ++c) y[c] = _mm256_sign_epi8(loadu_256(aq[c] + 32 * k), w);
        }
#pragma GCC unroll 8
        for (int c = 0; c < NC; ++c) {
          const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(mag, y[c]), sc);
          acc[r][c] = k == 0 ? s : _mm256_add_epi32(acc[r][c], s);
        }
      }
    }
  }
};

// The ternary types' tile (TQ1_0, TQ2_0: sc = 1, w = q - 1 with Ops::trits(row, k) giving the
// unsigned q = 0..2) without the sign steps: vpmaddubsw(q, a) takes q as it is, and the int16
// pair sums of all 8 chunks add up in int16 (|pair| <= 2 * 2 * 127, 8 chunks 4064) before one
// vpmaddwd; sum(a) over the same elements (vpmaddubsw(1, a), once per token for all the rows)
// takes the + 1 back. Each int32 lane ends with IqTileAvx2's integer (elements 4i..4i+3 of every
// chunk), so the outputs are bitwise those of that tile and of the panel
// (IqKernels.GemmPanelEqualsTheTileBitwise). Decode of the 1.1B preset on Zen 5 (t/s): TQ2_0
// avx2 78-84 -> 94-106, avx512 83 -> 96-102; TQ1_0 (with trits' cheaper decoding) avx2 38 -> 63,
// avx512 39 -> 65.
template <class Ops>
struct TernaryTile : IqTileBase<Ops, TernaryTile<Ops>> {
  using Row = typename Ops::Row;

  template <int NR, int NC>
  static inline void block(const Row* rows, const uint8_t* const* aq, __m256i (&acc)[NR][NC]) {
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    __m256i s16[NR][NC], a16[NC];  // the pair sums of q * a and of a
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      __m256i q[NR];
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) q[r] = Ops::trits(rows[r], k);
#pragma GCC unroll 8
      for (int c = 0; c < NC; ++c) {
        const __m256i a = loadu_256(aq[c] + 32 * k);
        const __m256i sa = _mm256_maddubs_epi16(ones8, a);
        a16[c] = k == 0 ? sa : _mm256_add_epi16(a16[c], sa);
#pragma GCC unroll 8
        for (int r = 0; r < NR; ++r) {
          const __m256i p = _mm256_maddubs_epi16(q[r], a);
          s16[r][c] = k == 0 ? p : _mm256_add_epi16(s16[r][c], p);
        }
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
      for (int c = 0; c < NC; ++c) acc[r][c] = _mm256_madd_epi16(_mm256_sub_epi16(s16[r][c], a16[c]), ones16);
  }
};

// A chunk's pair scales from its two B-bit scales packed as s = hi << B | lo: int16 lanes 0..7
// 2 lo + 1 (elements 0..15), lanes 8..15 2 hi + 1 (elements 16..31); one load per chunk instead
// of two broadcasts and an insert (IQ2_S, IQ2_XS: B = 4; IQ1_M: B = 3).
template <int B>
struct PairScaleTable {
  alignas(32) int16_t v[1 << (2 * B)][16];
  constexpr PairScaleTable() : v() {
    for (int s = 0; s < (1 << (2 * B)); ++s)
      for (int i = 0; i < 16; ++i)
        v[s][i] = static_cast<int16_t>(2 * (i < 8 ? s & ((1 << B) - 1) : s >> B) + 1);
  }
};
template <int B>
inline constexpr PairScaleTable<B> kPairScaleTable{};

template <int B>
static inline __m256i pair_scales(unsigned s) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(kPairScaleTable<B>.v[s]));
}

// The 32 grid indexes of a super-block of 8 chunks x 4 groups (idx[4 k + g]): qs[4 k + g] | hi[g]
// lane k, hi[g] holding group g's high index bits of each chunk already in place (bits 8 up).
// A few 128-bit operations per super-block in load_row instead of a scalar extraction per group.
static inline void grid_indexes4(const uint8_t* qs, const __m128i (&hi)[4], uint16_t* idx) {
  const __m128i lo01 = _mm_unpacklo_epi16(hi[0], hi[1]), lo23 = _mm_unpacklo_epi16(hi[2], hi[3]);
  const __m128i hi01 = _mm_unpackhi_epi16(hi[0], hi[1]), hi23 = _mm_unpackhi_epi16(hi[2], hi[3]);
  const __m128i n[4] = {_mm_unpacklo_epi32(lo01, lo23), _mm_unpackhi_epi32(lo01, lo23),  // chunks 0-1, 2-3
                        _mm_unpacklo_epi32(hi01, hi23), _mm_unpackhi_epi32(hi01, hi23)};
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    const __m128i q = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 8 * j)));
    _mm_store_si128(reinterpret_cast<__m128i*>(idx + 8 * j), _mm_or_si128(q, n[j]));
  }
}

// The 4 grid entries (8 g +- 1, kIq1Grid8Delta) of an IQ1_S / IQ1_M chunk from its groups' indexes.
// The types' Rows form all 32 indexes of a super-block with a few 128-bit operations in load_row:
// the per-group bit extraction (or pdep) and the per-chunk delta vector they replace were most of
// the decoding. Decode of the 1.1B preset on Zen 5, t/s: IQ1_M avx2 26 -> 44, avx512 30 -> 47;
// IQ1_S avx2 31 -> 39, avx512 41 (unchanged; it had pdep).
static inline __m256i iq1_grid4(const uint16_t* idx) {
  return _mm256_setr_epi64x(
      static_cast<long long>(kIq1Grid8Delta[idx[0]]), static_cast<long long>(kIq1Grid8Delta[idx[1]]),
      static_cast<long long>(kIq1Grid8Delta[idx[2]]), static_cast<long long>(kIq1Grid8Delta[idx[3]]));
}

// Four grid entries of 8 bytes (groups 0..3 of a chunk).
static inline __m256i grid4(uint64_t g0, uint64_t g1, uint64_t g2, uint64_t g3) {
  return _mm256_setr_epi64x(static_cast<long long>(g0), static_cast<long long>(g1),
                            static_cast<long long>(g2), static_cast<long long>(g3));
}

// 32 sign bits (bit j of byte l for element 8 l + j) -> the chunk's signs.
static inline IqSigns sign_bytes(uint32_t signs) {
#if defined(__AVX512F__)
  return signs;
#else
  return _mm256_or_si256(bits_to_bytes(signs), _mm256_set1_epi8(1));
#endif
}

#if defined(__AVX512F__)
// Four 7-bit sign fields in the low bits of bytes 0..3 -> the chunk's mask: each byte's bit 7 is
// the parity of its bits 0..6 (bit 0 of t ^ t >> 4 ^ t >> 2 ^ t >> 1, per byte).
static inline IqSigns signs7_bytes(uint32_t t) {
  uint32_t p = t ^ (t >> 4);
  p ^= p >> 2;
  p ^= p >> 1;
  return t | ((p & 0x01010101u) << 7);
}
#else
// The 8 sign bytes (+1 or -1) of a group of 8 whose signs are stored as 7 bits, the eighth
// being their parity (iq_signs_from7): one load per group instead of the parity, bit shuffles
// and compares, which were most of the decoding (1.1B preset, tg32 at avx512 on Zen 5: IQ2_XXS
// 20 -> 39, IQ2_XS 19 -> 30, IQ3_XXS 15 -> 21 t/s; AVX-512 now takes the masks above).
struct SignBytes7 {
  uint64_t v[128];
  constexpr SignBytes7() : v() {
    for (uint32_t b = 0; b < 128; ++b) {
      const uint32_t bits = iq_signs_from7(b);
      uint64_t bytes = 0;
      for (int j = 0; j < 8; ++j) bytes |= static_cast<uint64_t>((bits >> j) & 1 ? 0xFF : 0x01) << (8 * j);
      v[b] = bytes;
    }
  }
};
inline constexpr SignBytes7 kSignBytes7{};

// Groups 0..3 of a chunk: their 7-bit sign fields s0..s3 -> the chunk's sign bytes.
static inline IqSigns signs7(uint32_t s0, uint32_t s1, uint32_t s2, uint32_t s3) {
  return _mm256_setr_epi64x(
      static_cast<long long>(kSignBytes7.v[s0 & 127]), static_cast<long long>(kSignBytes7.v[s1 & 127]),
      static_cast<long long>(kSignBytes7.v[s2 & 127]), static_cast<long long>(kSignBytes7.v[s3 & 127]));
}
#endif

// The signs of the 7-bit fields in bits 9..15 of four 16-bit entries (IQ2_XS: q, little-endian).
static inline IqSigns signs7_high9(uint64_t q) {
#if defined(__AVX512F__)
  return signs7_bytes(_pdep_u32(static_cast<uint32_t>(_pext_u64(q, 0xFE00FE00FE00FE00ull)), 0x7F7F7F7Fu));
#else
  return signs7(static_cast<uint32_t>(q >> 9), static_cast<uint32_t>(q >> 25), static_cast<uint32_t>(q >> 41),
                static_cast<uint32_t>(q >> 57));
#endif
}

// The signs of the four 7-bit fields packed in bits 0..27 of aux (IQ2_XXS, IQ3_XXS). AVX-512 CPUs
// have a fast pdep; the AVX2 level leaves it alone (microcoded on Zen 1 and 2).
static inline IqSigns signs7_packed(uint32_t aux) {
#if defined(__AVX512F__)
  return signs7_bytes(_pdep_u32(aux, 0x7F7F7F7Fu));
#else
  return signs7(aux, aux >> 7, aux >> 14, aux >> 21);
#endif
}

}  // namespace
}  // namespace strata::cpu
