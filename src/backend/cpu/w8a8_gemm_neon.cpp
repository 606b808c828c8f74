// Armv8-A NEON W8A8 kernel (w8a8_kernels.h), for cores without DotProd. One 16-byte load of the
// group is the same 4 quants of 4 rows, made signed by xor 0x80; smull / smull2 against the
// token's 4 activations (broadcast) give 16-bit products (|q| <= 127: no overflow), and sadalp
// adds them pairwise into int32 lanes (row r: k0+k1, k2+k3; row r+1: ...), folded at the end
// by addp into one sum per row. The integer sums are exact and the epilogue is the scalar
// reference's float operations, so the output is bit-identical to it. 2 tokens per pass.
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/w8a8_kernels.h"

namespace strata::cpu {
namespace {

constexpr int kPassTokens = 2;

template <int NC>
static inline void tile(const uint8_t* w, int64_t kp, const float* w_scale, const int8_t* qs, size_t stride,
                        const float* scale, float* y, size_t y_stride, int n_rows) {
  int32x4_t lo[NC][4], hi[NC][4];  // per quad q: rows 4q, 4q+1 (lo) and 4q+2, 4q+3 (hi), pair sums
  for (int c = 0; c < NC; ++c)
    for (int q = 0; q < 4; ++q) lo[c][q] = hi[c][q] = vdupq_n_s32(0);
  for (int64_t k = 0; k < kp; k += 4) {
    int8x16_t av[NC];
    for (int c = 0; c < NC; ++c) {
      int32_t v;
      std::memcpy(&v, qs + static_cast<size_t>(c) * stride + k, 4);
      av[c] = vreinterpretq_s8_s32(vdupq_n_s32(v));
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      const int8x16_t wq = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(w + k * 16 + q * 16), vdupq_n_u8(0x80)));
      for (int c = 0; c < NC; ++c) {
        lo[c][q] = vpadalq_s16(lo[c][q], vmull_s8(vget_low_s8(wq), vget_low_s8(av[c])));
        hi[c][q] = vpadalq_s16(hi[c][q], vmull_high_s8(wq, av[c]));
      }
    }
  }
  for (int c = 0; c < NC; ++c) {
    const float32x4_t sa = vdupq_n_f32(scale[c]);
    float out[16];
    for (int q = 0; q < 4; ++q) {
      const int32x4_t dot = vpaddq_s32(lo[c][q], hi[c][q]);  // rows 4q..4q+3
      vst1q_f32(out + 4 * q, vmulq_f32(vcvtq_f32_s32(dot), vmulq_f32(sa, vld1q_f32(w_scale + 4 * q))));
    }
    std::memcpy(y + static_cast<size_t>(c) * y_stride, out, static_cast<size_t>(n_rows) * sizeof(float));
  }
}

}  // namespace

void w8a8_gemm_neon(const uint8_t* w, int64_t kp, const float* w_scale, const W8A8ActTile& a, int nc,
                    float* y, size_t y_stride, int n_rows) {
  if (nc <= 0 || n_rows <= 0) return;
  for (int c0 = 0; c0 < nc; c0 += kPassTokens) {
    const int8_t* qs = a.qs + static_cast<size_t>(c0) * a.stride;
    float* yc = y + static_cast<size_t>(c0) * y_stride;
    if (nc - c0 >= 2)
      tile<2>(w, kp, w_scale, qs, a.stride, a.scale + c0, yc, y_stride, n_rows);
    else
      tile<1>(w, kp, w_scale, qs, a.stride, a.scale + c0, yc, y_stride, n_rows);
  }
}

}  // namespace strata::cpu
