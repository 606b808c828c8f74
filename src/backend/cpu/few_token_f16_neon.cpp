// NEON few-token F16 GEMM (few_token_f16.h): F16 weights widened by fcvtl, float activations
// loaded as they are. Per output the operations of float_tile_neon.h's F16 tile (4 lanes,
// vaddvq_f32, the tail element by element), so the sums are bitwise equal to it.
#include <arm_neon.h>

#include "backend/cpu/few_token_f16_tile.h"

namespace strata::cpu {
namespace {

// 4 weight rows x 6 tokens: 24 accumulators + 4 widened weight vectors + one activation of the
// 32 registers; one conversion per 6 FMAs.
constexpr int kTileRows = 4, kTileCols = 6;

float32x4_t widen4(const uint8_t* p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p))));
}

struct Tile {
  // w: [NR][n] F16, ws bytes apart; a: [NC][n] floats, as bytes apart; out[c * os + r].
  template <int NR, int NC>
  static void run(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, float* out,
                  size_t os) {
    float32x4_t acc[NR][NC];
    for (int r = 0; r < NR; ++r)
      for (int c = 0; c < NC; ++c) acc[r][c] = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      // Once per cache line: the next row tile's same line, so the matrix streams from memory
      // while this tile's FMAs run.
      if ((i & 31) == 0)
        for (int r = 0; r < NR; ++r) __builtin_prefetch(w + (NR + r) * ws + i * 2);
      float32x4_t wv[NR];
      for (int r = 0; r < NR; ++r) wv[r] = widen4(w + r * ws + i * 2);
      for (int c = 0; c < NC; ++c) {
        const float32x4_t av = vld1q_f32(reinterpret_cast<const float*>(a + c * as) + i);
        for (int r = 0; r < NR; ++r) acc[r][c] = vfmaq_f32(acc[r][c], wv[r], av);
      }
    }
    for (int r = 0; r < NR; ++r)
      for (int c = 0; c < NC; ++c) {
        const auto* ac = reinterpret_cast<const float*>(a + c * as);
        float sum = vaddvq_f32(acc[r][c]);
        for (int64_t j = i; j < n; ++j) sum += load_half(w + r * ws + 2 * j) * ac[j];
        out[c * os + r] = sum;
      }
  }
};

void widen(const void* h, float* x, int64_t n) {
  const auto* in = static_cast<const uint8_t*>(h);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(x + i, widen4(in + 2 * i));
  for (; i < n; ++i) x[i] = load_half(in + 2 * i);
}

constexpr FewTokenF16Kernels kKernels{widen, few_token_gemm<Tile, kTileRows, kTileCols>, kTileRows};

}  // namespace

const FewTokenF16Kernels& few_token_f16_kernels_neon() {
  return kKernels;
}

}  // namespace strata::cpu
