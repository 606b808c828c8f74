// AVX-512 VNNI W8A8 kernel (w8a8_kernels.h): one zmm holds 4 quants of the group's 16 rows, so
// `vpdpbusd acc[c], w, bcast(a[c][k..k+3])` adds 4 products to 16 rows' sums of token c. The
// whole row accumulates in int32; the epilogue subtracts the weights' bias (128 * sum(a)) and
// applies the one scale product.
// GCC 12's AVX-512 intrinsic headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/w8a8_kernels.h"

namespace strata::cpu {
namespace {

static inline __m512i broadcast_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// NC tokens: NC integer accumulators. With few tokens (decode) a second set over the odd k
// steps gives two dependency chains per token; integer sums are exact, so the split changes
// nothing.
template <int NC>
static inline void tile(const uint8_t* w, int64_t kp, const float* w_scale, const W8A8ActTile& a, float* y,
                        size_t y_stride, int n_rows) {
  constexpr bool kSplit = NC <= 4;
  __m512i acc[NC], acc2[kSplit ? NC : 1];
  for (int c = 0; c < NC; ++c) acc[c] = _mm512_setzero_si512();
  if constexpr (kSplit)
    for (int c = 0; c < NC; ++c) acc2[c] = _mm512_setzero_si512();
  int64_t k = 0;
  if constexpr (kSplit) {
    for (; k + 8 <= kp; k += 8) {
      _mm_prefetch(reinterpret_cast<const char*>(w + k * 16 + kW8A8PrefetchBytes), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(w + k * 16 + kW8A8PrefetchBytes + 64), _MM_HINT_T0);
      const __m512i w0 = _mm512_loadu_si512(w + k * 16);
      const __m512i w1 = _mm512_loadu_si512(w + k * 16 + 64);
#pragma GCC unroll 4
      for (int c = 0; c < NC; ++c) {
        const int8_t* aq = a.qs + static_cast<size_t>(c) * a.stride + k;
        acc[c] = _mm512_dpbusd_epi32(acc[c], w0, broadcast_i32(aq));
        acc2[c] = _mm512_dpbusd_epi32(acc2[c], w1, broadcast_i32(aq + 4));
      }
    }
  }
  for (; k < kp; k += 4) {
    _mm_prefetch(reinterpret_cast<const char*>(w + k * 16 + kW8A8PrefetchBytes), _MM_HINT_T0);
    const __m512i w0 = _mm512_loadu_si512(w + k * 16);
#pragma GCC unroll 12
    for (int c = 0; c < NC; ++c)
      acc[c] = _mm512_dpbusd_epi32(acc[c], w0, broadcast_i32(a.qs + static_cast<size_t>(c) * a.stride + k));
  }
  const __m512 ws = _mm512_loadu_ps(w_scale);
  const __mmask16 rows = static_cast<__mmask16>((1u << n_rows) - 1);
#pragma GCC unroll 12
  for (int c = 0; c < NC; ++c) {
    __m512i dot = acc[c];
    if constexpr (kSplit) dot = _mm512_add_epi32(dot, acc2[c]);
    dot = _mm512_sub_epi32(dot, _mm512_set1_epi32(128 * a.sum[c]));
    const __m512 s = _mm512_mul_ps(_mm512_set1_ps(a.scale[c]), ws);
    _mm512_mask_storeu_ps(y + static_cast<size_t>(c) * y_stride, rows,
                          _mm512_mul_ps(_mm512_cvtepi32_ps(dot), s));
  }
}

using TileFn = void (*)(const uint8_t*, int64_t, const float*, const W8A8ActTile&, float*, size_t, int);
constexpr TileFn kTiles[kW8A8Cols] = {tile<1>, tile<2>, tile<3>, tile<4>,  tile<5>,  tile<6>,
                                      tile<7>, tile<8>, tile<9>, tile<10>, tile<11>, tile<12>};

}  // namespace

void w8a8_gemm_avx512(const uint8_t* w, int64_t kp, const float* w_scale, const W8A8ActTile& a, int nc,
                      float* y, size_t y_stride, int n_rows) {
  if (nc <= 0 || n_rows <= 0) return;
  kTiles[nc - 1](w, kp, w_scale, a, y, y_stride, n_rows);
}

}  // namespace strata::cpu
