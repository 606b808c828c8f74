// AVX-512 (VNNI, VBMI) integer Q8_0 V accumulation (kv_value_tile.h): 16 bytes of 4 token rows
// are gathered into one zmm and transposed with one vpermb so that int32 lane e holds column e
// of the 4 tokens; vpdpbusd then adds u[j] * q[j][e] over the 4 tokens for one query row, its 4
// weights broadcast. Each (group, 16-column half) keeps all 8 rows' sums in registers over the
// tile's tokens, then scales them once into the f32 accumulators.
// GCC 12's AVX-512 intrinsic headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "backend/cpu/kv_value_tile_impl.h"

namespace strata::cpu {
namespace {

constexpr int kRows = kValueTileRows;

inline __mmask16 first_lanes(int n) {
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : n <= 0 ? 0 : static_cast<__mmask16>((1u << n) - 1);
}

// u: [32] u8 weights of one row and group (as the scalar reference rounds them); returns su.
float quantize_weights(const float* pr, const float* dg, int bs, uint8_t* u) {
  const __m512 w0 = _mm512_mul_ps(_mm512_maskz_loadu_ps(first_lanes(bs), pr), _mm512_load_ps(dg));
  const __m512 w1 =
      bs > 16 ? _mm512_mul_ps(_mm512_maskz_loadu_ps(first_lanes(bs - 16), pr + 16), _mm512_load_ps(dg + 16))
              : _mm512_setzero_ps();
  const float wmax = _mm512_reduce_max_ps(bs > 16 ? _mm512_max_ps(w0, w1) : w0);
  if (!(wmax >= kMinWeight)) {
    std::memset(u, 0, 32);
    return 0.0f;
  }
  const __m512 inv = _mm512_set1_ps(255.0f / wmax);
  // Round to nearest even as nearbyint does; the saturating narrowing clamps to 255.
  _mm_storeu_si128(reinterpret_cast<__m128i*>(u),
                   _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(w0, inv))));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(u + 16),
                   _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(w1, inv))));
  return wmax / 255.0f;
}

// Columns [16 h, 16 h + 16) of group g of tokens j0 .. j0 + 3 (rows at or past bs read as 0):
// int32 lane e = the 4 tokens' bytes of column 16 h + e.
inline __m512i value_quad(const uint8_t* v, size_t row_bytes, int g, int h, int j0, int bs) {
  const uint8_t* q = v + static_cast<size_t>(g) * kQ8GroupBytes + 2 + 16 * h;
  __m128i rows[4];
  for (int i = 0; i < 4; ++i)
    rows[i] = j0 + i < bs ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + (j0 + i) * row_bytes))
                          : _mm_setzero_si128();
  __m512i z = _mm512_castsi128_si512(rows[0]);
  z = _mm512_inserti32x4(z, rows[1], 1);
  z = _mm512_inserti32x4(z, rows[2], 2);
  z = _mm512_inserti32x4(z, rows[3], 3);
  // Byte 4 e + i of the result = byte e of token i = byte 16 i + e of z.
  const __m512i idx =
      _mm512_set_epi8(63, 47, 31, 15, 62, 46, 30, 14, 61, 45, 29, 13, 60, 44, 28, 12, 59, 43, 27, 11, 58, 42,
                      26, 10, 57, 41, 25, 9, 56, 40, 24, 8, 55, 39, 23, 7, 54, 38, 22, 6, 53, 37, 21, 5, 52,
                      36, 20, 4, 51, 35, 19, 3, 50, 34, 18, 2, 49, 33, 17, 1, 48, 32, 16, 0);
  return _mm512_permutexvar_epi8(idx, z);
}

inline __m512i broadcast4(const uint8_t* p) {
  int32_t x;
  std::memcpy(&x, p, 4);
  return _mm512_set1_epi32(x);
}

// load_value_scales (kv_value_tile_impl.h) in vectors: the fp16 scales gathered with scalar
// loads, then converted and checked 16 tokens at a time.
bool load_scales(const uint8_t* v, size_t row_bytes, int n_groups, int bs, int first, int last, float* d) {
  alignas(64) uint16_t h[kMaxValueGroups][32];
  for (int j = 0; j < bs; ++j)
    for (int g = 0; g < n_groups; ++g)
      std::memcpy(&h[g][j], v + static_cast<size_t>(j) * row_bytes + static_cast<size_t>(g) * kQ8GroupBytes,
                  2);
  const __mmask32 valid =
      static_cast<__mmask32>((last >= 31 ? ~0u : (2u << last) - 1) & ~((1u << first) - 1));
  __mmask16 bad = 0;
  for (int g = 0; g < n_groups; ++g)
    for (int c = 0; c < 2; ++c) {
      const __mmask16 m = static_cast<__mmask16>(valid >> (16 * c));
      const __m512 x = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, &h[g][16 * c]));
      // negative, NaN (not >= 0) or +inf
      bad |= _mm512_mask_cmp_ps_mask(m, x, _mm512_setzero_ps(), _CMP_NGE_UQ) |
             _mm512_mask_cmp_ps_mask(m, x, _mm512_set1_ps(INFINITY), _CMP_EQ_OQ);
      _mm512_store_ps(d + g * 32 + 16 * c, x);
    }
  return bad == 0;
}

bool accumulate_q8_0(float* const* acc, int n_rows, const float* p, int bs, const uint8_t* v,
                     size_t row_bytes, int hd_v, int first, int last, const float* corr) {
  const int n_groups = (hd_v + 31) / 32;
  alignas(64) float d[kMaxValueGroups * 32];
  if (!load_scales(v, row_bytes, n_groups, bs, first, std::min(last, bs - 1), d)) return false;
  ValueTileWeights tw;
  quantize_tile_weights(quantize_weights, n_rows, p, bs, d, n_groups, tw);
  const int j_begin = first / 4 * 4;
  for (int g = 0; g < n_groups; ++g)
    for (int h = 0; h < 2 && 32 * g + 16 * h < hd_v; ++h) {
      const int c0 = 32 * g + 16 * h;
      const __mmask16 cols = first_lanes(hd_v - c0);
      __m512i dot[kRows];
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) dot[r] = _mm512_setzero_si512();
      for (int j0 = j_begin; j0 <= last; j0 += 4) {
        const __m512i vq = value_quad(v, row_bytes, g, h, j0, bs);
#pragma GCC unroll 8
        for (int r = 0; r < kRows; ++r)
          dot[r] = _mm512_dpbusd_epi32(dot[r], broadcast4(tw.u[r] + g * 32 + j0), vq);
      }
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r)  // constant trip count: dot[] stays in registers
        if (r < n_rows) {
          const __m512 a = _mm512_mul_ps(_mm512_maskz_loadu_ps(cols, acc[r] + c0), _mm512_set1_ps(corr[r]));
          _mm512_mask_storeu_ps(acc[r] + c0, cols,
                                _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[r]), _mm512_set1_ps(tw.su[r][g]), a));
        }
    }
  return true;
}

constexpr KvValueTileKernels kKernels = {accumulate_q8_0};

}  // namespace

const KvValueTileKernels& kv_value_tile_kernels_avx512() {
  return kKernels;
}

}  // namespace strata::cpu
