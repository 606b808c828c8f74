// AVX-VNNI kernels of the interleaved layout (packed_kernels.h): the AVX-512 scheme on 256-bit
// registers, for CPUs with VEX vpdpbusd but no AVX-512 (Alder Lake and later clients; also
// Sapphire Rapids and Zen 5 when STRATA_ISA=avxvnni).
//
// One ymm register holds the same 4 quants of 8 rows as unsigned bytes u (the 4/5-bit quants,
// q + 128 for Q8_0, the IQ4_NL value + 128), so `vpdpbusd acc, w, bcast(a[4j..4j+3])` adds 4
// exact products to 8 rows' int32 sums for one token. The integer accumulator starts at the
// activation's bias -zero_point * sum(a), which removes the weights' zero point for free; once
// per block it is scaled by d_w * d_a into a float accumulator (one FMA per 8 rows and token, in
// block order: batch invariant, kernels.h). The activations come from the AVX2 quantizer;
// Q4_K's and Q5_K's carry one scale per super-block (kPackedSuperSums), so their sub-block sums,
// times the integer scales, stay in int32 and the float steps run once per 256 columns.
// Tiles: 8 rows x up to 4 tokens for several tokens (16 rows x 3 tokens spilled the broadcasts
// and accumulators); decode takes 16 rows and splits each token's chain in two (the vpdpbusd
// latency would bound it otherwise) and prefetches. The half-scaled kinds (Q6_K, Q3_K, Q2_K) use
// 16 rows x up to 3 tokens below 4 tokens, else a decoded panel in 8 x 4 tiles.
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstring>

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

constexpr int kTileTokens = 3;
constexpr int kPrefetchBytes = 4096;  // as packed_gemm_avx2.cpp's (1 KiB: 7-31% slower on Zen 5)

static inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// acc[c] += w . a[c][4j..4j+3] for the NC tokens.
template <int NC>
static inline void dot4(__m256i (&acc)[NC], __m256i w, const int8_t* aq, int j) {
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c) acc[c] = _mm256_dpbusd_avx_epi32(acc[c], w, bcast4(aq + 32 * c + 4 * j));
}

// Groups (k, k + 4) of half h as unsigned bytes (4-bit layouts: low / high nibbles of chunk k).
template <Kind K>
static inline void unpack_nibbles(const uint8_t* qs, int k, int h, __m256i& lo, __m256i& hi) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i p = loadu_256(qs + 64 * k + 32 * h);
  lo = _mm256_and_si256(p, m4);
  hi = _mm256_and_si256(_mm256_srli_epi16(p, 4), m4);
  if constexpr (kIqLut<K>) {  // nibble -> table value + 128
    const __m256i table = _mm256_broadcastsi128_si256(_mm_add_epi8(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(lut_values<K>())), _mm_set1_epi8(-128)));
    lo = _mm256_shuffle_epi8(table, lo);
    hi = _mm256_shuffle_epi8(table, hi);
  }
  if constexpr (kHasQh<K>) {
    const __m256i b16 = _mm256_set1_epi8(16);
    uint32_t mlo, mhi;
    std::memcpy(&mlo, qs + 256 + 8 * k + 4 * h, 4);
    std::memcpy(&mhi, qs + 256 + 8 * (k + 4) + 4 * h, 4);
    lo = _mm256_or_si256(lo, _mm256_and_si256(bits_to_bytes(mlo), b16));
    hi = _mm256_or_si256(hi, _mm256_and_si256(bits_to_bytes(mhi), b16));
  }
}

// The integer part of one block for half h: even element groups into acc, odd ones into acc2
// (the caller passes the same array twice when it has enough independent chains).
template <Kind K, int NC>
static inline void block_dots(__m256i (&acc)[NC], __m256i (&acc2)[NC], const uint8_t* qs, int h,
                              const int8_t* aq) {
  if constexpr (K == Kind::Q8_0) {
#pragma GCC unroll 4
    for (int j = 0; j < 8; j += 2) {
      dot4<NC>(acc, loadu_256(qs + 64 * j + 32 * h), aq, j);
      dot4<NC>(acc2, loadu_256(qs + 64 * (j + 1) + 32 * h), aq, j + 1);
    }
  } else {
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      __m256i lo, hi;
      unpack_nibbles<K>(qs, k, h, lo, hi);
      dot4<NC>(acc, lo, aq, k);
      dot4<NC>(acc2, hi, aq, k + 4);
    }
  }
}

// The exact integer sums of one block of half h for NC tokens added to acc; kSplit: through two
// chains (too few independent ones otherwise), added at the end.
template <Kind K, int NC, bool kSplit>
static inline void block_sums(__m256i (&acc)[NC], const uint8_t* qs, int h, const int8_t* aq) {
  if constexpr (kSplit) {
    __m256i acc2[NC];
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) acc2[c] = _mm256_setzero_si256();
    block_dots<K, NC>(acc, acc2, qs, h, aq);
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) acc[c] = _mm256_add_epi32(acc[c], acc2[c]);
  } else {
    block_dots<K, NC>(acc, acc, qs, h, aq);
  }
}

// Element half HH of a sub-block of a half-scaled kind (Q6_K, Q3_K, Q2_K) for one row half and NC
// tokens, its 4 chunks' quants u0..u3: the integer sums of u * a start at the activation's
// -zero_point * sum(a) of the half, then are scaled by dw = d * sc of the half and d_a; Q2_K adds
// mw * d_a * sum(a) (mw = -dmin * min). kSplit: two integer chains per token.
template <Kind K, int HH, int NC, bool kSplit>
static inline void half_dots(__m256 (&accf)[NC], __m256i u0, __m256i u1, __m256i u2, __m256i u3, __m256 dw,
                             [[maybe_unused]] __m256 mw, const int8_t* aq, const PackedActMeta* am) {
  constexpr int g = 4 * HH;  // the activation's 4-element group of chunk 0
  __m256i acc[NC], acc2[NC];
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c) {
    acc[c] = _mm256_set1_epi32(half_sum_bias(am[c].extra, HH, kHalfZeroPoint<K>));
    acc2[c] = _mm256_setzero_si256();
  }
  if constexpr (kSplit) {
    dot4<NC>(acc, u0, aq, g);
    dot4<NC>(acc2, u1, aq, g + 1);
    dot4<NC>(acc, u2, aq, g + 2);
    dot4<NC>(acc2, u3, aq, g + 3);
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) acc[c] = _mm256_add_epi32(acc[c], acc2[c]);
  } else {
    dot4<NC>(acc, u0, aq, g);
    dot4<NC>(acc, u1, aq, g + 1);
    dot4<NC>(acc, u2, aq, g + 2);
    dot4<NC>(acc, u3, aq, g + 3);
  }
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c) {
    const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(am[c].d));
    accf[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[c]), scale, accf[c]);
    if constexpr (K == Kind::Q2_K) {
      const float a_sum = am[c].d * static_cast<float>(half_sum(am[c].extra, HH));
      accf[c] = _mm256_fmadd_ps(mw, _mm256_set1_ps(a_sum), accf[c]);
    }
  }
}

// half_dots of sub-block j's element half HH for row halves 0..NH-1, decoding its quants.
template <Kind K, int HH, int NH, int NC>
static inline void half_sums(__m256 (&accf)[NH][NC], const uint8_t* w, int j, const int8_t* aq,
                             const PackedActMeta* am) {
  constexpr bool kSplit = NH * NC <= 2;  // too few independent chains otherwise
  const uint8_t* qs = w + kQsOffset<K> + j * kSubBlockBytes<K>;
#pragma GCC unroll 2
  for (int h = 0; h < NH; ++h) {
    __m256 dw, mw = _mm256_setzero_ps();
    half_factors<K, HH>(w, j, h, dw, mw);
    half_dots<K, HH, NC, kSplit>(accf[h], half_quants<K, 0, HH>(qs, h), half_quants<K, 1, HH>(qs, h),
                                 half_quants<K, 2, HH>(qs, h), half_quants<K, 3, HH>(qs, h), dw, mw, aq, am);
  }
}

// half_dots of sub-block s's element half HH for row halves 0..NH-1 from a decoded panel.
template <Kind K, int HH, int NH, int NC>
static inline void panel_half_sums(__m256 (&accf)[NH][NC], const HalfPanel& p, int64_t s, int h0,
                                   const int8_t* aq, const PackedActMeta* am) {
  constexpr bool kSplit = NH * NC <= 2;
#pragma GCC unroll 2
  for (int i = 0; i < NH; ++i) {
    const int h = h0 + i;
    half_dots<K, HH, NC, kSplit>(accf[i], p.quants(s, HH, 0, h), p.quants(s, HH, 1, h), p.quants(s, HH, 2, h),
                                 p.quants(s, HH, 3, h), p.dw(s, HH, h), p.mw(s, HH, h), aq, am);
  }
}

// Q4_K / Q5_K over one super-block with kPackedSuperSums activations (one d_a per 256): each
// sub-block's exact vpdpbusd sums times its integer scale (vpmulld; the sums, up to
// 32 * 31 * 127, do not fit vpmaddwd's int16) accumulate in int32 over the 8 sub-blocks, and
// k_super_epilogue adds the mins and scales both once per 256 columns instead of per 32.
template <Kind K, int NH, int NC>
static inline void k_super_block(__m256 (&accf)[NH][NC], const uint8_t* w, int h0, const int8_t* aq,
                                 const PackedActMeta* am, bool prefetch) {
  constexpr bool kSplit = NH * NC <= 2;  // too few independent chains otherwise
  __m256i acc[NH][NC];
  set_zero(acc);
  for (int j = 0; j < kSubBlocks<K>; ++j) {
    if (prefetch) prefetch_share<K>(w + kPrefetchBytes, j);  // ahead of the hardware's
    const uint8_t* qs = w + kQsOffset<K> + j * kSubBlockBytes<K>;
    const int8_t* aj = aq + j * kPackCols * 32;
#pragma GCC unroll 2
    for (int h = 0; h < NH; ++h) {
      __m256i sb[NC];
#pragma GCC unroll 4
      for (int c = 0; c < NC; ++c) sb[c] = _mm256_setzero_si256();
      block_sums<K, NC, kSplit>(sb, qs, h0 + h, aj);
      const __m256i sc = _mm256_cvtepu8_epi32(
          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + kQ4kScOffset + 16 * j + 8 * (h0 + h))));
#pragma GCC unroll 4
      for (int c = 0; c < NC; ++c) acc[h][c] = _mm256_add_epi32(acc[h][c], _mm256_mullo_epi32(sb[c], sc));
    }
  }
#pragma GCC unroll 2
  for (int h = 0; h < NH; ++h) k_super_epilogue<NC>(accf[h], acc[h], w, h0 + h, am);
}

// Block j of a 32-column kind (the legacy types, IQ4_NL, MXFP4) for row halves h0..h0+NH-1 and NC
// tokens: its exact integer sums (from the activation's bias for the zero-point kinds), scaled by
// d_w * d_a into accf, plus m_w * s_a for the kinds with a min.
template <Kind K, int NH, int NC>
static inline void sum_block(__m256 (&accf)[NH][NC], const uint8_t* w, int j, int h0, const int8_t* aq,
                             const PackedActMeta* am) {
  const uint8_t* qs = w + kQsOffset<K> + j * kSubBlockBytes<K>;
  __m256i acc[NH][NC];
#pragma GCC unroll 2
  for (int h = 0; h < NH; ++h) {
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c)
      acc[h][c] = kHasMin<K> ? _mm256_setzero_si256() : _mm256_set1_epi32(am[c].extra);
    block_sums<K, NC, NH * NC <= 2>(acc[h], qs, h0 + h, aq);
  }
#pragma GCC unroll 2
  for (int h = 0; h < NH; ++h) scale_block<K, NC>(accf[h], acc[h], w, j, h0 + h, am);
}

// y[c * y_stride + r] for the rows of halves 0..NH-1 (< n_rows) and tokens c < NC. prefetch:
// this call is the group's first pass (decode, or the first tile of several), which streams it.
template <Kind K, int NH, int NC>
void tile(const uint8_t* w, int64_t nb, const int8_t* aq, const PackedActMeta* am, int h0, float* y,
          size_t y_stride, int n_rows, bool prefetch) {
  __m256 accf[NH][NC];
#pragma GCC unroll 2
  for (int h = 0; h < NH; ++h)
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) accf[h][c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; b += kSubBlocks<K>, w += kBlockBytes<K>) {
    if constexpr (kKScaleMin<K>) {
      k_super_block<K, NH, NC>(accf, w, h0, aq, am, NC == 1 || prefetch);
      aq += kSubBlocks<K> * kPackCols * 32;
      am += kSubBlocks<K> * kPackCols;
    } else {
      for (int j = 0; j < kSubBlocks<K>; ++j, aq += kPackCols * 32, am += kPackCols) {
        if (NC == 1 || prefetch) prefetch_share<K>(w + kPrefetchBytes, j);  // ahead of the hardware's
        if constexpr (kHalfScaled<K>) {
          half_sums<K, 0, NH, NC>(accf, w, j, aq, am);
          half_sums<K, 1, NH, NC>(accf, w, j, aq, am);
        } else {
          sum_block<K, NH, NC>(accf, w, j, h0, aq, am);
        }
      }
    }
  }
  store_tile<NH, NC>(accf, h0, y, y_stride, n_rows);
}

// Several tokens: one row half at a time for up to kHalfTileTokens tokens, so that the integer
// and float accumulators and the broadcasts fit the 16 registers (both halves of 3 tokens spilled
// the broadcasts on Zen 5).
constexpr int kHalfTileTokens = 4;

// tile() of a half-scaled kind over a decoded panel for row half h and NC tokens (the register
// budget of one_half_gemm's tiles): the same integer sums and float steps in the same order as
// tile(), so the same bits.
template <Kind K, int NC>
void panel_tile(const HalfPanel& p, int64_t nb, const int8_t* aq, const PackedActMeta* am, int h, float* y,
                size_t y_stride, int n_rows) {
  __m256 accf[1][NC];
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c) accf[0][c] = _mm256_setzero_ps();
  for (int64_t s = 0; s < nb; ++s, aq += kPackCols * 32, am += kPackCols) {
    panel_half_sums<K, 0, 1, NC>(accf, p, s, h, aq, am);
    panel_half_sums<K, 1, 1, NC>(accf, p, s, h, aq, am);
  }
  store_tile<1, NC>(accf, h, y, y_stride, n_rows);
}

// A half-scaled group of several register tiles: decoded once, then each tile over the panel.
template <Kind K>
void half_panel_gemm(const uint8_t* w, int64_t nb, const PackedActTile& a, int nc, float* y, size_t y_stride,
                     int n_rows) {
  thread_local HalfPanel panel;
  const int n_halves = n_rows > 8 ? 2 : 1;
  panel.decode<K, true>(w, nb, n_halves, kPrefetchBytes);
  for_each_token_tile<kHalfTileTokens>(nc, n_halves, [&](auto n, int c0, int h) {
    panel_tile<K, decltype(n)::value>(panel, nb, a.qs + 32 * c0, a.meta + c0, h, y + c0 * y_stride, y_stride,
                                      n_rows);
  });
}

template <Kind K>
void one_half_gemm(const uint8_t* w, int64_t nb, const PackedActTile& a, int nc, float* y, size_t y_stride,
                   int n_rows) {
  for_each_token_tile<kHalfTileTokens>(nc, n_rows > 8 ? 2 : 1, [&](auto n, int c0, int h) {
    const bool first = c0 == 0 && h == 0;  // the pass that brings the group in
    tile<K, 1, decltype(n)::value>(w, nb, a.qs + 32 * c0, a.meta + c0, h, y + c0 * y_stride, y_stride, n_rows,
                                   first);
  });
}

template <Kind K>
void group_kernel(const uint8_t* w, int64_t nb, const PackedActTile& a, int nc, float* y, size_t y_stride,
                  int n_rows) {
  if constexpr (kHalfScaled<K>) {
    if (nc > kTileTokens) return half_panel_gemm<K>(w, nb, a, nc, y, y_stride, n_rows);
  } else {
    if (nc > 1) return one_half_gemm<K>(w, nb, a, nc, y, y_stride, n_rows);
  }
  // One tile of 16 rows: decode, or up to kTileTokens tokens of a half-scaled kind.
  auto one_tile = [&](auto n, int, int) {
    if (n_rows > 8)
      tile<K, 2, decltype(n)::value>(w, nb, a.qs, a.meta, 0, y, y_stride, n_rows, true);
    else
      tile<K, 1, decltype(n)::value>(w, nb, a.qs, a.meta, 0, y, y_stride, n_rows, true);
  };
  call_tile<kHalfScaled<K> ? kTileTokens : 1>(nc, 0, 0, one_tile);
}

}  // namespace

void packed_gemm_avxvnni(TensorType type, const uint8_t* w, int64_t nb, const PackedActTile& a, int nc,
                         float* y, size_t y_stride, int n_rows) {
  STRATA_CHECK(nc >= 1 && nc <= kPackCols && n_rows >= 1 && n_rows <= kPackRows);
  STRATA_CHECK(a.super_sums == (type == TensorType::Q4_K || type == TensorType::Q5_K),
               "AVX-VNNI packed kernels take kPackedSuperSums activations for Q4_K and Q5_K only");
  with_any_kind(type,
                [&](auto kind) { group_kernel<decltype(kind)::value>(w, nb, a, nc, y, y_stride, n_rows); });
}

}  // namespace strata::cpu
