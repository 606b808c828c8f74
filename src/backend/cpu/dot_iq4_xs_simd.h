// The IQ4_XS x Q8_K register tile, 256-bit integer code shared by dot_iq4_xs_avx2.cpp and
// dot_iq4_xs_avxvnni.cpp (each compiles its own copy for its ISA; internal linkage; AVX-512 has
// its own 512-bit form of the same scheme, dot_iq4_xs_avx512.cpp). Element x = d * (ls - 32) *
// kIq4nlValues[q] (blocks.h), ls the 6-bit scale of each 32-element chunk.
//
// The loop over super-blocks is the generic IQ tile's (iq_tile_run, iq_tile_avx2.h); unlike
// its chunk-by-chunk block this one works on chunk pairs, so that decode, which
// is bound by the cost of decoding the weights (one activation block per many rows), does as
// little per weight byte as possible:
//  - one 32-byte load holds the nibbles of chunks 2p and 2p + 1: its low nibbles are elements
//    0..15 of both chunks ("lo"), its high nibbles elements 16..31 ("hi"); the activation is
//    rearranged to match once per column (two cross-lane permutes), not once per row;
//  - the 8 scales of a super-block are decoded with vector shifts into int16 once per row, and
//    one in-lane shuffle per pair gives scale 2p to the low lane and 2p + 1 to the high one,
//    which is right for both the lo and hi products;
//  - the kIq4nlValues lookup is one vpshufb per 32 weights; the products are exact integers:
//    vpmaddubsw(|a|, sign(w, a)) (|a|, |w| <= 127: pair sums <= 2 * 127 * 127, no saturation),
//    |a| taken once per column so that a row costs one vpsignb per 32 weights, then the scale
//    in vpmaddwd (or vpdpwssd where the file is compiled for AVX-VNNI) into int32 lanes.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backend/cpu/block_access.h"
#include "backend/cpu/iq_tile_avx2.h"
#include "backend/cpu/simd_avx2.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace strata::cpu {
namespace {

// The 6-bit scales of a super-block's 8 chunks, minus 32, as int32 lanes: lane i takes its low
// 4 bits from nibble i of scales_l, its high 2 bits from bits 2i, 2i + 1 of scales_h.
static inline __m256i iq4_xs_chunk_scales(const uint8_t* blk) {
  uint16_t h;
  uint32_t l;
  std::memcpy(&h, blk + offsetof(BlockIQ4_XS, scales_h), 2);
  std::memcpy(&l, blk + offsetof(BlockIQ4_XS, scales_l), 4);
  const __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(l)),
                                                        _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                                      _mm256_set1_epi32(0x0f));
  const __m256i hi =
      _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(h), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                       _mm256_set1_epi32(3));
  return _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
}

// acc + the int16 pairs of p times sc, summed into int32 lanes (exact either way).
static inline __m256i iq4_xs_madd_acc(__m256i acc, __m256i p, __m256i sc) {
#if defined(__AVXVNNI__)
  return _mm256_dpwssd_avx_epi32(acc, p, sc);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(p, sc));
#endif
}

struct Iq4XsTile {
  static constexpr size_t kBlockBytes = sizeof(BlockIQ4_XS);
  // One weight super-block, ready for the pair loop.
  struct Row {
    const uint8_t* qs;  // [128] nibbles, 16 bytes per chunk
    __m256i scales;     // int16 ls - 32 of chunks 0..7, in both 128-bit lanes
    float f;            // d
  };

  static Row load_row(const uint8_t* blk) {
    Row row;
    const __m256i ls = iq4_xs_chunk_scales(blk);
    const __m128i s16 = _mm_packs_epi32(_mm256_castsi256_si128(ls), _mm256_extracti128_si256(ls, 1));
    row.scales = _mm256_broadcastsi128_si256(s16);
    row.qs = blk + offsetof(BlockIQ4_XS, qs);
    row.f = load_half(blk + offsetof(BlockIQ4_XS, d));
    return row;
  }

  // Pair p (chunks 2p, 2p + 1): lo / hi as described above, as signed values, and the scales.
  static inline void pair(const Row& row, int p, __m256i& lo, __m256i& hi, __m256i& sc) {
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)));
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i x = loadu_256(row.qs + 32 * p);
    lo = _mm256_shuffle_epi8(table, _mm256_and_si256(x, m4));
    hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(x, 4), m4));
    // Low lane: int16 scale 2p (bytes 4p, 4p + 1); high lane: scale 2p + 1.
    const char a = static_cast<char>(4 * p), b = static_cast<char>(4 * p + 1);
    const char c = static_cast<char>(4 * p + 2), d = static_cast<char>(4 * p + 3);
    sc = _mm256_shuffle_epi8(row.scales, _mm256_setr_epi8(a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, c,
                                                          d, c, d, c, d, c, d, c, d, c, d, c, d, c, d));
  }

  // One super-block, pair by pair (iq_tile_run's block).
  template <int NR, int NC>
  static inline void block(const Row* rows, const uint8_t* const* aq, __m256i (&acc)[NR][NC]) {
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      // The pair's activations in the lo / hi order: |a| and a (for its signs), once per column.
      __m256i alo[NC], ahi[NC], ulo[NC], uhi[NC];
#pragma GCC unroll 8
      for (int c = 0; c < NC; ++c) {
        const __m256i a0 = loadu_256(aq[c] + 64 * p), a1 = loadu_256(aq[c] + 64 * p + 32);
        alo[c] = _mm256_permute2x128_si256(a0, a1, 0x20);
        ahi[c] = _mm256_permute2x128_si256(a0, a1, 0x31);
        ulo[c] = _mm256_sign_epi8(alo[c], alo[c]);
        uhi[c] = _mm256_sign_epi8(ahi[c], ahi[c]);
      }
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) {
        __m256i lo, hi, sc;
        pair(rows[r], p, lo, hi, sc);
#pragma GCC unroll 8
        for (int c = 0; c < NC; ++c) {
          const __m256i plo = _mm256_maddubs_epi16(ulo[c], _mm256_sign_epi8(lo, alo[c]));
          const __m256i phi = _mm256_maddubs_epi16(uhi[c], _mm256_sign_epi8(hi, ahi[c]));
          const __m256i s = p == 0 ? _mm256_madd_epi16(plo, sc) : iq4_xs_madd_acc(acc[r][c], plo, sc);
          acc[r][c] = iq4_xs_madd_acc(s, phi, sc);
        }
      }
    }
  }

  // out[c * os + r] = dot(w row r, a row c) for NR x NC; w: [n / 256] blocks, a: [n / 256] Q8_K.
  template <int NR, int NC>
  static void run(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, float* out,
                  size_t os) {
    iq_tile_run<Iq4XsTile, NR, NC>(n, w, ws, a, as, out, os);
  }
};

}  // namespace
}  // namespace strata::cpu
