// IQ4_XS x Q8_K kernels for AVX-512 (BW + VNNI): a 512-bit tile. Element x = d * (ls - 32) *
// kIq4nlValues[q] (blocks.h), ls the 6-bit scale of each 32-element chunk.
//
// Decode is bound by the cost of decoding the weights (one activation block per many rows), so
// a row does as little per weight byte as it can, and everything that depends only on the
// activation is done once per column:
//  - one 64-byte load holds the nibbles of chunks 4h..4h + 3, one per 128-bit lane: its low
//    nibbles are elements 0..15 of each chunk ("lo"), its high nibbles elements 16..31 ("hi");
//    the activation is rearranged to match (one two-source permute each for lo and hi);
//  - the kIq4nlValues lookup is one vpshufb per 64 weights; the 8 scales are decoded with
//    vector shifts into int16 once per row, and one in-lane shuffle per half gives each lane its
//    chunk's scale;
//  - the products are exact integers: vpmaddubsw(|a|, w with the sign of a), AVX-512 having no
//    vpsignb: |a| and the mask of negative a once per column, one masked 0 - w per row and 64
//    weights (pair sums <= 2 * 128 * 127, no saturation), then the scale in vpdpwssd.
// The int32 sums are the same integers as the 256-bit tile's (dot_iq4_xs_simd.h). Once per
// super-block they are scaled by d_w * d_a into a float accumulator; an output's operations do
// not depend on the tile shape or its place in it (batch invariance, kernels.h). Decode (one
// column) prefetches the next tile's rows. GCC 12's AVX-512 intrinsic headers trip
// -W(maybe-)uninitialized on their own _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backend/cpu/block_access.h"
#include "backend/cpu/dot_iq4_xs_simd.h"  // iq4_xs_chunk_scales
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/simd_avx2.h"
#include "backend/cpu/tile_dispatch.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace strata::cpu {
namespace {

struct Iq4XsTile512 {
  struct Row {
    const uint8_t* qs;  // [128] nibbles, 16 bytes per chunk
    __m512i scales;     // int16 ls - 32 of chunks 0..7, in each 128-bit lane
    float f;            // d
  };

  static Row load_row(const uint8_t* blk) {
    Row row;
    const __m256i ls = iq4_xs_chunk_scales(blk);
    row.scales = _mm512_broadcast_i32x4(_mm256_cvtepi32_epi16(ls));
    row.qs = blk + offsetof(BlockIQ4_XS, qs);
    row.f = load_half(blk + offsetof(BlockIQ4_XS, d));
    return row;
  }

  // Byte pattern giving lane c the int16 scale of chunk 4h + c in every pair.
  static inline __m512i scale_pattern(int h) {
    alignas(64) int8_t b[64];
    for (int c = 0; c < 4; ++c)
      for (int i = 0; i < 16; ++i) b[16 * c + i] = static_cast<int8_t>(2 * (4 * h + c) + (i & 1));
    return _mm512_load_si512(b);
  }

  // One column's half h (chunks 4h..4h + 3) in the lo / hi order: |a| and the mask of a < 0.
  struct ColHalf {
    __m512i ulo, uhi;
    __mmask64 nlo, nhi;
  };

  static inline ColHalf col_half(const uint8_t* aq, int h) {
    const __m512i a0 = _mm512_loadu_si512(aq + 128 * h), a1 = _mm512_loadu_si512(aq + 128 * h + 64);
    // Qwords: a0 lanes 0, 2 then a1 lanes 0, 2 (elements 0..15 of each chunk); 1, 3 for hi.
    const __m512i lo = _mm512_permutex2var_epi64(a0, _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13), a1);
    const __m512i hi = _mm512_permutex2var_epi64(a0, _mm512_setr_epi64(2, 3, 6, 7, 10, 11, 14, 15), a1);
    return {_mm512_abs_epi8(lo), _mm512_abs_epi8(hi), _mm512_movepi8_mask(lo), _mm512_movepi8_mask(hi)};
  }

  // out[c * os + r] = dot(w row r, a row c) for NR x NC; w: [n / 256] blocks, a: [n / 256] Q8_K.
  template <int NR, int NC>
  static void run(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, float* out,
                  size_t os) {
    const __m512i table =
        _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)));
    const __m512i m4 = _mm512_set1_epi8(0x0f), zero = _mm512_setzero_si512();
    const __m512i pattern[2] = {scale_pattern(0), scale_pattern(1)};
    __m512 accf[NR][NC];
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
      for (int c = 0; c < NC; ++c) accf[r][c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < n / kQK_K; ++b) {
      if constexpr (NC == 1) prefetch_next_rows<NR>(w + b * sizeof(BlockIQ4_XS), ws, sizeof(BlockIQ4_XS));
      Row rows[NR];
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) rows[r] = load_row(w + r * ws + b * sizeof(BlockIQ4_XS));
      const uint8_t* aq[NC];
      float da[NC];
      q8_k_columns<NC>(a, as, b, aq, da);
      __m512i acc[NR][NC];
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        ColHalf col[NC];
#pragma GCC unroll 8
        for (int c = 0; c < NC; ++c) col[c] = col_half(aq[c], h);
#pragma GCC unroll 8
        for (int r = 0; r < NR; ++r) {
          const __m512i x = _mm512_loadu_si512(rows[r].qs + 64 * h);
          const __m512i lo = _mm512_shuffle_epi8(table, _mm512_and_si512(x, m4));
          const __m512i hi = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(x, 4), m4));
          const __m512i sc = _mm512_shuffle_epi8(rows[r].scales, pattern[h]);
#pragma GCC unroll 8
          for (int c = 0; c < NC; ++c) {
            const __m512i plo =
                _mm512_maddubs_epi16(col[c].ulo, _mm512_mask_sub_epi8(lo, col[c].nlo, zero, lo));
            const __m512i phi =
                _mm512_maddubs_epi16(col[c].uhi, _mm512_mask_sub_epi8(hi, col[c].nhi, zero, hi));
            const __m512i s = h == 0 ? _mm512_madd_epi16(plo, sc) : _mm512_dpwssd_epi32(acc[r][c], plo, sc);
            acc[r][c] = _mm512_dpwssd_epi32(s, phi, sc);
          }
        }
      }
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
        for (int c = 0; c < NC; ++c)
          accf[r][c] =
              _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r][c]), _mm512_set1_ps(rows[r].f * da[c]), accf[r][c]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
      for (int c = 0; c < NC; ++c) out[c * os + r] = _mm512_reduce_add_ps(accf[r][c]);
  }
};

using Tile = Iq4XsTile512;
// 4 x 2: 8 float and 8 int32 accumulators, 2 columns' |a| (4), a row's decoded half (3) and the
// constants fit the 32 registers; decode (one column) reads four rows' streams at once.
constexpr int kTileRows = 4, kTileCols = 2;
constexpr TypeKernels kKernels{TensorType::Q8_K,   quantize_row_q8_k_avx512,
                               tile_vec_dot<Tile>, dispatch_tile<Tile, kTileRows, kTileCols>,
                               kTileRows,          kTileCols};

}  // namespace

const TypeKernels& iq4_xs_kernels_avx512() {
  return kKernels;
}

}  // namespace strata::cpu
