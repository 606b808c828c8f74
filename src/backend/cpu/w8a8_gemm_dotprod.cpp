// Armv8.2 DotProd W8A8 kernel (w8a8_kernels.h). One 16-byte load of the group is the same 4
// quants of 4 rows; xor 0x80 makes them signed (q = u8 - 128), so `sdot acc, w, a[lane]` adds 4
// exact products to 4 rows' int32 sums of one token, the lane picking the token's 4 activations
// out of a 16-byte register loaded once per 16 k. The whole row accumulates in int32 (no bias
// to remove); the epilogue converts and multiplies by a_scale * w_scale as the scalar reference
// does, so the output is bit-identical to it. Up to 4 tokens per pass: 16 accumulators, 4
// activation registers and the weights fit the 32 vector registers.
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/w8a8_kernels.h"

namespace strata::cpu {
namespace {

constexpr int kPassTokens = 4;

static inline int8x16_t signed_quads(const uint8_t* p) {
  return vreinterpretq_s8_u8(veorq_u8(vld1q_u8(p), vdupq_n_u8(0x80)));
}

static inline int8x16_t broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

// The 4 k-steps (J = 0..3) of 16 k: rows 4q..4q+3 against lane J of every token's register.
template <int J, int NC>
static inline void step(int32x4_t (&acc)[NC][4], const uint8_t* w, const int8x16_t (&av)[NC]) {
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    const int8x16_t wq = signed_quads(w + J * 64 + q * 16);
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) acc[c][q] = vdotq_laneq_s32(acc[c][q], wq, av[c], J);
  }
}

template <int NC>
static inline void tile(const uint8_t* w, int64_t kp, const float* w_scale, const int8_t* qs, size_t stride,
                        const float* scale, float* y, size_t y_stride, int n_rows) {
  int32x4_t acc[NC][4];
  for (int c = 0; c < NC; ++c)
    for (int q = 0; q < 4; ++q) acc[c][q] = vdupq_n_s32(0);
  int64_t k = 0;
  for (; k + 16 <= kp; k += 16) {
    int8x16_t av[NC];
    for (int c = 0; c < NC; ++c) av[c] = vld1q_s8(qs + static_cast<size_t>(c) * stride + k);
    const uint8_t* wk = w + k * 16;
    step<0>(acc, wk, av);
    step<1>(acc, wk, av);
    step<2>(acc, wk, av);
    step<3>(acc, wk, av);
  }
  for (; k < kp; k += 4)
    for (int q = 0; q < 4; ++q) {
      const int8x16_t wq = signed_quads(w + k * 16 + q * 16);
      for (int c = 0; c < NC; ++c)
        acc[c][q] = vdotq_s32(acc[c][q], wq, broadcast4(qs + static_cast<size_t>(c) * stride + k));
    }
  for (int c = 0; c < NC; ++c) {
    const float32x4_t sa = vdupq_n_f32(scale[c]);
    float out[16];
    for (int q = 0; q < 4; ++q)
      vst1q_f32(out + 4 * q, vmulq_f32(vcvtq_f32_s32(acc[c][q]), vmulq_f32(sa, vld1q_f32(w_scale + 4 * q))));
    std::memcpy(y + static_cast<size_t>(c) * y_stride, out, static_cast<size_t>(n_rows) * sizeof(float));
  }
}

using TileFn = void (*)(const uint8_t*, int64_t, const float*, const int8_t*, size_t, const float*, float*,
                        size_t, int);
constexpr TileFn kTiles[kPassTokens] = {tile<1>, tile<2>, tile<3>, tile<4>};

}  // namespace

void w8a8_gemm_dotprod(const uint8_t* w, int64_t kp, const float* w_scale, const W8A8ActTile& a, int nc,
                       float* y, size_t y_stride, int n_rows) {
  if (nc <= 0 || n_rows <= 0) return;
  for (int c0 = 0; c0 < nc; c0 += kPassTokens) {
    const int n = std::min(kPassTokens, nc - c0);
    kTiles[n - 1](w, kp, w_scale, a.qs + static_cast<size_t>(c0) * a.stride, a.stride, a.scale + c0,
                  y + static_cast<size_t>(c0) * y_stride, y_stride, n_rows);
  }
}

}  // namespace strata::cpu
