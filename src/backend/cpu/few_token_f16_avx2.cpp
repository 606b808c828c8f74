// AVX2 few-token F16 GEMM (few_token_f16.h): F16 weights widened with F16C, float activations
// taken straight from memory by the FMA. Per output the operations of float_tile_avx2.h's F16
// tile (8 lanes, hsum_f32x8, the tail element by element), so the sums are bitwise equal to it.
#include <immintrin.h>

#include "backend/cpu/few_token_f16_tile.h"
#include "backend/cpu/simd_avx2.h"

namespace strata::cpu {
namespace {

// 2 weight rows x 6 tokens: 12 accumulators + 2 widened weight vectors of the 16 registers; one
// conversion per 6 FMAs (the F16 tile spends one per 1.3).
constexpr int kTileRows = 2, kTileCols = 6;

struct Tile {
  // w: [NR][n] F16, ws bytes apart; a: [NC][n] floats, as bytes apart; out[c * os + r].
  template <int NR, int NC>
  static void run(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, float* out,
                  size_t os) {
    __m256 acc[NR][NC];
    for (int r = 0; r < NR; ++r)
      for (int c = 0; c < NC; ++c) acc[r][c] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      // Once per cache line: the next row tile's same line, so the matrix streams from memory
      // while this tile's FMAs run (a few-token step is close to compute-bound).
      if ((i & 31) == 0)
        for (int r = 0; r < NR; ++r)
          _mm_prefetch(reinterpret_cast<const char*>(w + (NR + r) * ws + i * 2), _MM_HINT_T0);
      __m256 wv[NR];
      for (int r = 0; r < NR; ++r)
        wv[r] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + r * ws + i * 2)));
      for (int c = 0; c < NC; ++c) {
        const __m256 av = _mm256_loadu_ps(reinterpret_cast<const float*>(a + c * as) + i);
        for (int r = 0; r < NR; ++r) acc[r][c] = _mm256_fmadd_ps(wv[r], av, acc[r][c]);
      }
    }
    for (int r = 0; r < NR; ++r)
      for (int c = 0; c < NC; ++c) {
        const auto* ac = reinterpret_cast<const float*>(a + c * as);
        float sum = hsum_f32x8(acc[r][c]);
        for (int64_t j = i; j < n; ++j) sum += load_half(w + r * ws + 2 * j) * ac[j];
        out[c * os + r] = sum;
      }
  }
};

void widen(const void* h, float* x, int64_t n) {
  const auto* in = static_cast<const uint8_t*>(h);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i))));
  for (; i < n; ++i) x[i] = load_half(in + 2 * i);
}

constexpr FewTokenF16Kernels kKernels{widen, few_token_gemm<Tile, kTileRows, kTileCols>, kTileRows};

}  // namespace

const FewTokenF16Kernels& few_token_f16_kernels_avx2() {
  return kKernels;
}

}  // namespace strata::cpu
