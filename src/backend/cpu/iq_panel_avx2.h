// Prefill of the IQ and ternary types: a few rows decoded once into a panel, then every token of
// the call passes over it. iq_tile_avx2.h's tile decodes each super-block again for every tile
// of TC tokens, and the decoding (grid gathers, sign bits, scales) is most of its work; here it
// is paid once per row for the whole call. Compiled into the AVX2 and AVX-512 files as
// iq_tile_avx2.h is; internal linkage.
//
// The products differ from the tile's only in how the exact integers are formed: with the
// activation made unsigned (u = a + 128, a in [-127, 127] from Q8_K),
// vpmaddubsw(u, w) needs no sign step and cannot saturate while 2 * 255 * max|w| < 32768
// (Ops::kMaxAbsW); the panel keeps 128 * sum(sc * w) per int32 lane to take back. Each lane
// then holds the same integer as the tile's (elements 4i..4i+3 of every chunk of the
// super-block), scaled and accumulated by the same float operations in the same order, so the
// outputs are bitwise the tile's (batch invariance, kernels.h).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/cpu/block_access.h"
#include "backend/cpu/simd_avx2.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

// One row's super-block, decoded: iq_chunk's values and pair scales for the 8 chunks.
struct alignas(64) IqPanelBlock {
  __m256i w[8];   // [chunk] int8 x 32
  __m256i sc[8];  // [chunk] int16 x 16, lane i scales elements 2i, 2i + 1
  __m256i bias;   // int32 x 8: 128 * sum over the chunks of sc * w, per lane
  float f;        // the row's float factor (Ops::Row::f)
};

template <class Ops>
static inline void decode_panel_block(const uint8_t* blk, IqPanelBlock& out) {
  static_assert(2 * 255 * Ops::kMaxAbsW < 32768, "vpmaddubsw(a + 128, w) could saturate");
  const typename Ops::Row row = Ops::load_row(blk);
  const __m256i u128 = _mm256_set1_epi8(static_cast<char>(0x80));
  __m256i bias = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int k = 0; k < 8; ++k) {
    iq_chunk<Ops>(row, k, out.w[k], out.sc[k]);
    bias = _mm256_add_epi32(bias, _mm256_madd_epi16(_mm256_maddubs_epi16(u128, out.w[k]), out.sc[k]));
  }
  out.bias = bias;
  out.f = row.f;
}

// Unit-scale types (the ternary TQ1_0, TQ2_0: sc = 1, |w| <= 1) add a super-block's int16 pair
// sums in int16 (8 chunks x 2 * 255 * 1 = 4080) before one vpmaddwd by 1: the same int32 lanes.
template <class Ops>
constexpr bool kUnitScales = requires {
  Ops::kUnitScales;
};

// out[c * os + r] for NR rows x NC tokens over a panel p[b * NR + r]; a: [NC] Q8_K rows.
template <int NR, int NC, bool kUnit>
static inline void panel_tile(int64_t nb, const IqPanelBlock* p, const uint8_t* a, size_t as, float* out,
                              size_t os) {
  [[maybe_unused]] const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  __m256 accf[NR][NC];
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < NC; ++c) accf[r][c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b, p += NR) {
    const uint8_t* aq[NC];
    float da[NC];
    q8_k_columns<NC>(a, as, b, aq, da);
    __m256i acc[NR][NC];
#if defined(__AVX512F__)
    // Two chunks per 512-bit register; their halves summed at the end give each 256-bit lane
    // the same integer.
    const __m512i flip512 = _mm512_set1_epi8(static_cast<char>(0x80));
    __m512i acc2[NR][NC];
#pragma GCC unroll 4
    for (int k = 0; k < 8; k += 2) {
      __m512i u[NC];
#pragma GCC unroll 8
      for (int c = 0; c < NC; ++c) u[c] = _mm512_xor_si512(_mm512_loadu_si512(aq[c] + 32 * k), flip512);
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) {
        const __m512i wk = _mm512_loadu_si512(&p[r].w[k]), sk = _mm512_loadu_si512(&p[r].sc[k]);
#pragma GCC unroll 8
        for (int c = 0; c < NC; ++c) {
          if constexpr (kUnit) {
            const __m512i s = _mm512_maddubs_epi16(u[c], wk);
            acc2[r][c] = k == 0 ? s : _mm512_add_epi16(acc2[r][c], s);
          } else {
            const __m512i s = _mm512_madd_epi16(_mm512_maddubs_epi16(u[c], wk), sk);
            acc2[r][c] = k == 0 ? s : _mm512_add_epi32(acc2[r][c], s);
          }
        }
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
      for (int c = 0; c < NC; ++c) {
        if constexpr (kUnit) acc2[r][c] = _mm512_madd_epi16(acc2[r][c], _mm512_set1_epi16(1));
        acc[r][c] =
            _mm256_add_epi32(_mm512_castsi512_si256(acc2[r][c]), _mm512_extracti64x4_epi64(acc2[r][c], 1));
      }
#else
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      __m256i u[NC];
#pragma GCC unroll 8
      for (int c = 0; c < NC; ++c) u[c] = _mm256_xor_si256(loadu_256(aq[c] + 32 * k), flip);  // a + 128
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 8
        for (int c = 0; c < NC; ++c) {
          if constexpr (kUnit) {
            const __m256i s = _mm256_maddubs_epi16(u[c], p[r].w[k]);
            acc[r][c] = k == 0 ? s : _mm256_add_epi16(acc[r][c], s);
          } else {
            const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(u[c], p[r].w[k]), p[r].sc[k]);
            acc[r][c] = k == 0 ? s : _mm256_add_epi32(acc[r][c], s);
          }
        }
      }
    }
    if constexpr (kUnit) {
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
        for (int c = 0; c < NC; ++c) acc[r][c] = _mm256_madd_epi16(acc[r][c], _mm256_set1_epi16(1));
    }
#endif
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
      for (int c = 0; c < NC; ++c)
        accf[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(acc[r][c], p[r].bias)),
                                     _mm256_set1_ps(p[r].f * da[c]), accf[r][c]);
  }
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < NC; ++c) out[c * os + r] = hsum_f32x8(accf[r][c]);
}

// panel_tile with nc (1..TC) as a compile-time count.
template <int NR, int TC, bool kUnit, int NC = 1>
static inline void panel_cols(int nc, int64_t nb, const IqPanelBlock* p, const uint8_t* a, size_t as,
                              float* out, size_t os) {
  if constexpr (NC < TC) {
    if (nc != NC) return panel_cols<NR, TC, kUnit, NC + 1>(nc, nb, p, a, as, out, os);
  }
  panel_tile<NR, NC, kUnit>(nb, p, a, as, out, os);
}

// NR rows of w decoded into this thread's panel, then the nc tokens of a in tiles of TC.
template <class Ops, int NR, int TC>
static void run_panel(int64_t n, const uint8_t* w, size_t ws, int nc, const uint8_t* a, size_t as, float* out,
                      size_t os) {
  thread_local std::vector<IqPanelBlock> panel;
  const int64_t nb = n / kQK_K;
  panel.resize(static_cast<size_t>(nb * NR));
  for (int64_t b = 0; b < nb; ++b) {
    // The next rows' streams: batched decode reads these rows from memory (16 sequences, Zen 5:
    // IQ2_XXS 144-149 -> 160-178, IQ3_S 132 -> 151 t/s at avx512, 82 -> 101-105 at avx2).
    prefetch_next_rows<NR>(w + b * Ops::kBlockBytes, ws, Ops::kBlockBytes);
    for (int r = 0; r < NR; ++r)
      decode_panel_block<Ops>(w + r * ws + b * Ops::kBlockBytes, panel[static_cast<size_t>(b * NR + r)]);
  }
  for (int c0 = 0; c0 < nc; c0 += TC)
    panel_cols<NR, TC, kUnitScales<Ops>>(std::min(TC, nc - c0), nb, panel.data(), a + c0 * as, as,
                                         out + c0 * os, os);
}

// The gemm_panel entry (kernels.h): nr <= TR rows (TR at a time, then single rows) x any nc.
template <class Ops, int TR, int TC>
void dispatch_panel(int64_t n, int nr, int nc, const void* w, size_t ws, const void* a, size_t as, float* out,
                    size_t os) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  int r0 = 0;
  for (; r0 + TR <= nr; r0 += TR) run_panel<Ops, TR, TC>(n, wb + r0 * ws, ws, nc, ab, as, out + r0, os);
  for (; r0 < nr; ++r0) run_panel<Ops, 1, TC>(n, wb + r0 * ws, ws, nc, ab, as, out + r0, os);
}

}  // namespace
}  // namespace strata::cpu
