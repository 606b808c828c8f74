// AVX-VNNI W8A8 kernel (w8a8_kernels.h): the group's 16 rows in two ymm halves (rows 0-7, 8-15),
// 256-bit VEX vpdpbusd, up to 6 tokens per pass (12 accumulators + 2 weights + 1 broadcast of the
// 16 ymm registers); more tokens take a second pass over the group's weights (from L1/L2).
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/simd_avx2.h"
#include "backend/cpu/w8a8_kernels.h"

namespace strata::cpu {
namespace {

template <int NC>
static inline void tile(const uint8_t* w, int64_t kp, const float* w_scale, const int8_t* qs, size_t stride,
                        const int32_t* sum, const float* scale, float* y, size_t y_stride, int n_rows) {
  __m256i lo[NC], hi[NC];
  for (int c = 0; c < NC; ++c) lo[c] = hi[c] = _mm256_setzero_si256();
  for (int64_t k = 0; k < kp; k += 4) {
    _mm_prefetch(reinterpret_cast<const char*>(w + k * 16 + kW8A8PrefetchBytes), _MM_HINT_T0);
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + k * 16));
    const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + k * 16 + 32));
#pragma GCC unroll 6
    for (int c = 0; c < NC; ++c) {
      const __m256i av = broadcast_i32(qs + static_cast<size_t>(c) * stride + k);
      lo[c] = _mm256_dpbusd_avx_epi32(lo[c], w0, av);
      hi[c] = _mm256_dpbusd_avx_epi32(hi[c], w1, av);
    }
  }
  const __m256 ws0 = _mm256_loadu_ps(w_scale), ws1 = _mm256_loadu_ps(w_scale + 8);
#pragma GCC unroll 6
  for (int c = 0; c < NC; ++c) {
    const __m256i bias = _mm256_set1_epi32(128 * sum[c]);
    const __m256 s = _mm256_set1_ps(scale[c]);
    const __m256 y0 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(lo[c], bias)), _mm256_mul_ps(s, ws0));
    const __m256 y1 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(hi[c], bias)), _mm256_mul_ps(s, ws1));
    store_rows16(y + static_cast<size_t>(c) * y_stride, y0, y1, n_rows);
  }
}

using TileFn = void (*)(const uint8_t*, int64_t, const float*, const int8_t*, size_t, const int32_t*,
                        const float*, float*, size_t, int);
constexpr int kPass = 6;
constexpr TileFn kTiles[kPass] = {tile<1>, tile<2>, tile<3>, tile<4>, tile<5>, tile<6>};

}  // namespace

void w8a8_gemm_avxvnni(const uint8_t* w, int64_t kp, const float* w_scale, const W8A8ActTile& a, int nc,
                       float* y, size_t y_stride, int n_rows) {
  if (n_rows <= 0) return;
  for (int c0 = 0; c0 < nc; c0 += kPass) {
    const int n = nc - c0 < kPass ? nc - c0 : kPass;
    kTiles[n - 1](w, kp, w_scale, a.qs + static_cast<size_t>(c0) * a.stride, a.stride, a.sum + c0,
                  a.scale + c0, y + static_cast<size_t>(c0) * y_stride, y_stride, n_rows);
  }
}

}  // namespace strata::cpu
