// AVX-512 few-token F16 GEMM (few_token_f16.h): F16 weights widened with vcvtph2ps, float
// activations taken straight from memory by the FMA. Per output the operations of
// float_tile_avx512.h's F16 tile (16 lanes, masked tail, _mm512_reduce_add_ps), so the sums
// are bitwise equal to it.
// GCC 12's AVX-512 intrinsic headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "backend/cpu/few_token_f16_tile.h"

namespace strata::cpu {
namespace {

// 4 weight rows x 6 tokens: 24 accumulators + 4 widened weight vectors of the 32 registers; one
// vcvtph2ps per 6 FMAs (the F16 tile spends one per 2).
constexpr int kTileRows = 4, kTileCols = 6;

struct Tile {
  // w: [NR][n] F16, ws bytes apart; a: [NC][n] floats, as bytes apart; out[c * os + r].
  template <int NR, int NC>
  static void run(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, float* out,
                  size_t os) {
    __m512 acc[NR][NC];
    for (int r = 0; r < NR; ++r)
      for (int c = 0; c < NC; ++c) acc[r][c] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
      // The next row tile's same cache line: the matrix streams from memory while this tile's
      // FMAs run (a few-token step is close to compute-bound, so the two must overlap).
      for (int r = 0; r < NR; ++r)
        _mm_prefetch(reinterpret_cast<const char*>(w + (NR + r) * ws + i * 2), _MM_HINT_T0);
      step<NR, NC, true>(acc, w, ws, a, as, i, 0xffff);
      step<NR, NC, true>(acc, w, ws, a, as, i + 16, 0xffff);
    }
    for (; i + 16 <= n; i += 16) step<NR, NC, true>(acc, w, ws, a, as, i, 0xffff);
    if (i < n) step<NR, NC, false>(acc, w, ws, a, as, i, static_cast<__mmask16>((1u << (n - i)) - 1));
    for (int r = 0; r < NR; ++r)
      for (int c = 0; c < NC; ++c) out[c * os + r] = _mm512_reduce_add_ps(acc[r][c]);
  }

  template <int NR, int NC, bool kFull>
  static inline void step(__m512 (&acc)[NR][NC], const uint8_t* w, size_t ws, const uint8_t* a, size_t as,
                          int64_t i, __mmask16 mask) {
    __m512 wv[NR];
    for (int r = 0; r < NR; ++r) {
      const uint8_t* p = w + r * ws + i * 2;
      wv[r] = _mm512_cvtph_ps(kFull ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))
                                    : _mm256_maskz_loadu_epi16(mask, p));
    }
    for (int c = 0; c < NC; ++c) {
      const auto* p = reinterpret_cast<const float*>(a + c * as) + i;
      const __m512 av = kFull ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(mask, p);
      for (int r = 0; r < NR; ++r) acc[r][c] = _mm512_fmadd_ps(wv[r], av, acc[r][c]);
    }
  }
};

void widen(const void* h, float* x, int64_t n) {
  const auto* in = static_cast<const uint8_t*>(h);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = static_cast<__mmask16>(n - i >= 16 ? 0xffff : (1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(x + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, in + 2 * i)));
  }
}

constexpr FewTokenF16Kernels kKernels{widen, few_token_gemm<Tile, kTileRows, kTileCols>, kTileRows};

}  // namespace

const FewTokenF16Kernels& few_token_f16_kernels_avx512() {
  return kKernels;
}

}  // namespace strata::cpu
