// AVX-VNNI integer Q8_0 V accumulation (kv_value_tile.h), the 256-bit form of the AVX-512 kernel:
// 8 bytes of 4 token rows are interleaved with two byte and two word unpacks so that int32 lane e
// holds column e of the 4 tokens; vpdpbusd then adds u[j] * q[j][e] over the 4 tokens for one
// query row, its 4 weights broadcast. Each (group, 8-column chunk) keeps all 8 rows' sums in
// registers over the tile's tokens, then scales them once into the f32 accumulators.
//
// Plain AVX2 has no such kernel: without vpdpbusd an exact u8 x s8 product needs vpmaddubsw on
// 7-bit halves of the weights (its int16 pair sums saturate at 2 * 255 * 127) plus vpmaddwd, about
// as many vector operations per value as the float path's conversion and FMA, so the driver
// dequantizes V there.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "backend/cpu/kv_value_tile_impl.h"
#include "backend/cpu/simd_avx2.h"

namespace strata::cpu {
namespace {

constexpr int kRows = kValueTileRows;

// Lanes [0, n) of a maskload / maskstore mask.
inline __m256i first_lanes(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// u: [32] u8 weights of one row and group (as the scalar reference rounds them); returns su.
float quantize_weights(const float* pr, const float* dg, int bs, uint8_t* u) {
  __m256 w[4];
  __m256 wmax = _mm256_setzero_ps();
  for (int k = 0; k < 4; ++k) {
    const __m256 p = _mm256_maskload_ps(pr + 8 * k, first_lanes(bs - 8 * k));
    w[k] = _mm256_mul_ps(p, _mm256_load_ps(dg + 8 * k));
    wmax = _mm256_max_ps(wmax, w[k]);
  }
  const float m = hmax_f32x8(wmax);
  if (!(m >= kMinWeight)) {
    std::memset(u, 0, 32);
    return 0.0f;
  }
  const __m256 inv = _mm256_set1_ps(255.0f / m);
  __m256i q[4];  // round to nearest even as nearbyint does
  for (int k = 0; k < 4; ++k) q[k] = _mm256_cvtps_epi32(_mm256_mul_ps(w[k], inv));
  // Saturating packs clamp to [0, 255]; they interleave 128-bit lanes, the permute restores order.
  const __m256i b = _mm256_packus_epi16(_mm256_packus_epi32(q[0], q[1]), _mm256_packus_epi32(q[2], q[3]));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(u),
                      _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  return m / 255.0f;
}

// Columns [8 h, 8 h + 8) of group g of tokens j0 .. j0 + 3 (rows at or past bs read as 0):
// int32 lane e = the 4 tokens' bytes of column 8 h + e.
inline __m256i value_quad(const uint8_t* v, size_t row_bytes, int g, int h, int j0, int bs) {
  const uint8_t* q = v + static_cast<size_t>(g) * kQ8GroupBytes + 2 + 8 * h;
  __m128i rows[4];
  for (int i = 0; i < 4; ++i)
    rows[i] = j0 + i < bs ? _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + (j0 + i) * row_bytes))
                          : _mm_setzero_si128();
  const __m128i r01 = _mm_unpacklo_epi8(rows[0], rows[1]), r23 = _mm_unpacklo_epi8(rows[2], rows[3]);
  return _mm256_set_m128i(_mm_unpackhi_epi16(r01, r23), _mm_unpacklo_epi16(r01, r23));
}

// load_value_scales (kv_value_tile_impl.h) in vectors: the fp16 scales gathered with scalar
// loads, then converted and checked 8 tokens at a time.
bool load_scales(const uint8_t* v, size_t row_bytes, int n_groups, int bs, int first, int last, float* d) {
  alignas(32) uint16_t h[kMaxValueGroups][32];
  for (int g = 0; g < n_groups && bs < 32; ++g) std::memset(&h[g][bs], 0, sizeof(uint16_t) * (32 - bs));
  for (int j = 0; j < bs; ++j)
    for (int g = 0; g < n_groups; ++g)
      std::memcpy(&h[g][j], v + static_cast<size_t>(j) * row_bytes + static_cast<size_t>(g) * kQ8GroupBytes,
                  2);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256 bad = _mm256_setzero_ps();
  for (int c = 0; c < 4; ++c) {
    const __m256i j = _mm256_add_epi32(lane, _mm256_set1_epi32(8 * c));
    const __m256 valid = _mm256_castsi256_ps(
        _mm256_andnot_si256(_mm256_or_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(first), j),
                                            _mm256_cmpgt_epi32(j, _mm256_set1_epi32(last))),
                            _mm256_set1_epi32(-1)));
    for (int g = 0; g < n_groups; ++g) {
      // Lanes outside [first, last] weigh nothing: zeroed after the conversion.
      const __m256 x = _mm256_and_ps(
          valid, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(&h[g][8 * c]))));
      // negative, NaN (not >= 0) or +inf
      bad = _mm256_or_ps(bad, _mm256_or_ps(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_NGE_UQ),
                                           _mm256_cmp_ps(x, _mm256_set1_ps(INFINITY), _CMP_EQ_OQ)));
      _mm256_store_ps(d + g * 32 + 8 * c, x);
    }
  }
  return _mm256_movemask_ps(bad) == 0;
}

bool accumulate_q8_0(float* const* acc, int n_rows, const float* p, int bs, const uint8_t* v,
                     size_t row_bytes, int hd_v, int first, int last, const float* corr) {
  const int n_groups = (hd_v + 31) / 32;
  alignas(32) float d[kMaxValueGroups * 32];
  if (!load_scales(v, row_bytes, n_groups, bs, first, std::min(last, bs - 1), d)) return false;
  ValueTileWeights tw;
  quantize_tile_weights(quantize_weights, n_rows, p, bs, d, n_groups, tw);
  const int j_begin = first / 4 * 4;
  for (int g = 0; g < n_groups; ++g)
    for (int h = 0; h < 4 && 32 * g + 8 * h < hd_v; ++h) {
      const int c0 = 32 * g + 8 * h;
      const __m256i cols = first_lanes(hd_v - c0);
      __m256i dot[kRows];
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) dot[r] = _mm256_setzero_si256();
      for (int j0 = j_begin; j0 <= last; j0 += 4) {
        const __m256i vq = value_quad(v, row_bytes, g, h, j0, bs);
#pragma GCC unroll 8
        for (int r = 0; r < kRows; ++r)
          dot[r] = _mm256_dpbusd_avx_epi32(
              dot[r], broadcast_i32(reinterpret_cast<const int8_t*>(tw.u[r] + g * 32 + j0)), vq);
      }
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r)  // constant trip count: dot[] stays in registers
        if (r < n_rows) {
          const __m256 a = _mm256_mul_ps(_mm256_maskload_ps(acc[r] + c0, cols), _mm256_set1_ps(corr[r]));
          _mm256_maskstore_ps(acc[r] + c0, cols,
                              _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[r]), _mm256_set1_ps(tw.su[r][g]), a));
        }
    }
  return true;
}

constexpr KvValueTileKernels kKernels = {accumulate_q8_0};

}  // namespace

const KvValueTileKernels& kv_value_tile_kernels_avxvnni() {
  return kKernels;
}

}  // namespace strata::cpu
