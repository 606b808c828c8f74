// AVX2 W8A8 kernel (w8a8_kernels.h), without VNNI: the biased weights are unbiased (xor 0x80)
// once per step, then per token vpmaddubsw(|w|, sign(a, w)) -> 16-bit pair sums (at most
// 2 * 127 * 127: no saturation) and vpmaddwd by ones -> int32 sums of 4. No bias to remove.
// Up to 4 tokens per pass (8 accumulators + |w|, w of both halves + ones + temporaries).
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/simd_avx2.h"
#include "backend/cpu/w8a8_kernels.h"

namespace strata::cpu {
namespace {

static inline __m256i dot4(__m256i acc, __m256i abs_w, __m256i w, __m256i a, __m256i ones) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(abs_w, _mm256_sign_epi8(a, w)), ones));
}

template <int NC>
static inline void tile(const uint8_t* w, int64_t kp, const float* w_scale, const int8_t* qs, size_t stride,
                        const float* scale, float* y, size_t y_stride, int n_rows) {
  const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i lo[NC], hi[NC];
  for (int c = 0; c < NC; ++c) lo[c] = hi[c] = _mm256_setzero_si256();
  for (int64_t k = 0; k < kp; k += 4) {
    _mm_prefetch(reinterpret_cast<const char*>(w + k * 16 + kW8A8PrefetchBytes), _MM_HINT_T0);
    const __m256i w0 =
        _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + k * 16)), bias);
    const __m256i w1 =
        _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + k * 16 + 32)), bias);
    const __m256i a0 = _mm256_abs_epi8(w0), a1 = _mm256_abs_epi8(w1);
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) {
      const __m256i av = broadcast_i32(qs + static_cast<size_t>(c) * stride + k);
      lo[c] = dot4(lo[c], a0, w0, av, ones);
      hi[c] = dot4(hi[c], a1, w1, av, ones);
    }
  }
  const __m256 ws0 = _mm256_loadu_ps(w_scale), ws1 = _mm256_loadu_ps(w_scale + 8);
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c) {
    const __m256 s = _mm256_set1_ps(scale[c]);
    const __m256 y0 = _mm256_mul_ps(_mm256_cvtepi32_ps(lo[c]), _mm256_mul_ps(s, ws0));
    const __m256 y1 = _mm256_mul_ps(_mm256_cvtepi32_ps(hi[c]), _mm256_mul_ps(s, ws1));
    store_rows16(y + static_cast<size_t>(c) * y_stride, y0, y1, n_rows);
  }
}

using TileFn = void (*)(const uint8_t*, int64_t, const float*, const int8_t*, size_t, const float*, float*,
                        size_t, int);
constexpr int kPass = 4;
constexpr TileFn kTiles[kPass] = {tile<1>, tile<2>, tile<3>, tile<4>};

}  // namespace

void w8a8_gemm_avx2(const uint8_t* w, int64_t kp, const float* w_scale, const W8A8ActTile& a, int nc,
                    float* y, size_t y_stride, int n_rows) {
  if (n_rows <= 0) return;
  for (int c0 = 0; c0 < nc; c0 += kPass) {
    const int n = nc - c0 < kPass ? nc - c0 : kPass;
    kTiles[n - 1](w, kp, w_scale, a.qs + static_cast<size_t>(c0) * a.stride, a.stride, a.scale + c0,
                  y + static_cast<size_t>(c0) * y_stride, y_stride, n_rows);
  }
}

}  // namespace strata::cpu
