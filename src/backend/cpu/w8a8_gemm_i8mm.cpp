// Armv8.6 I8MM W8A8 kernel (w8a8_kernels.h). smmla multiplies a 2 x 8 int8 matrix by an 8 x 2
// one into a 2 x 2 int32 tile: 32 exact products per instruction, twice sdot's. The group holds
// 4 quants per row, so the 2 x 8 weight operand of rows (r, r + 1) is zipped from two k-steps'
// 4-row registers (made signed by xor 0x80); the 8 x 2 activation operand is 8 consecutive
// quants of two tokens (a missing second token is zeros and its results are dropped, so a
// token's sums never depend on its neighbour). Accumulator lanes: (r, c), (r, c+1), (r+1, c),
// (r+1, c+1). A last k-step of 4 (kp % 8 == 4) pairs with zeros. The epilogue converts and
// multiplies by a_scale * w_scale as the scalar reference, so outputs are bit-identical to it.
// Pass: 16 rows x 4 tokens (two token pairs, 16 accumulators).
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/w8a8_kernels.h"

namespace strata::cpu {
namespace {

constexpr int kPassPairs = 2;

static inline int8x16_t signed_quads(const uint8_t* p) {
  return vreinterpretq_s8_u8(veorq_u8(vld1q_u8(p), vdupq_n_u8(0x80)));
}

// 8 quants of a token from k (4 when `half`, the rest zeros), or zeros without a token.
static inline int8x8_t act8(const int8_t* p, bool half) {
  if (p == nullptr) return vdup_n_s8(0);
  if (!half) return vld1_s8(p);
  uint32_t v;
  std::memcpy(&v, p, 4);
  return vreinterpret_s8_u64(vdup_n_u64(v));
}

// acc[p][2q + h] += rows 4q + 2h, 4q + 2h + 1 against token pair p (tokens tok[2p], tok[2p + 1];
// nullptr where the token is missing) over the whole row, for the first NP pairs.
template <int NP>
static inline void tile(const uint8_t* w, int64_t kp, const int8_t* const (&tok)[2 * kPassPairs],
                        int32x4_t (&acc)[kPassPairs][8]) {
  for (int p = 0; p < NP; ++p)
    for (int i = 0; i < 8; ++i) acc[p][i] = vdupq_n_s32(0);
  for (int64_t k = 0; k < kp; k += 8) {
    const bool half = k + 8 > kp;  // the last k-step of 4
    int8x16_t act[NP];
    for (int p = 0; p < NP; ++p)
      act[p] =
          vcombine_s8(act8(tok[2 * p] + k, half), act8(tok[2 * p + 1] ? tok[2 * p + 1] + k : nullptr, half));
      // tok[2p] is never nullptr for p < NP: the caller picks NP from the tokens present.
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      const int32x4_t x = vreinterpretq_s32_s8(signed_quads(w + k * 16 + q * 16));
      const int32x4_t y =
          half ? vdupq_n_s32(0) : vreinterpretq_s32_s8(signed_quads(w + (k + 4) * 16 + q * 16));
      const int8x16_t rows01 = vreinterpretq_s8_s32(vzip1q_s32(x, y));
      const int8x16_t rows23 = vreinterpretq_s8_s32(vzip2q_s32(x, y));
      for (int p = 0; p < NP; ++p) {
        acc[p][2 * q] = vmmlaq_s32(acc[p][2 * q], rows01, act[p]);
        acc[p][2 * q + 1] = vmmlaq_s32(acc[p][2 * q + 1], rows23, act[p]);
      }
    }
  }
}

}  // namespace

void w8a8_gemm_i8mm(const uint8_t* w, int64_t kp, const float* w_scale, const W8A8ActTile& a, int nc,
                    float* y, size_t y_stride, int n_rows) {
  if (nc <= 0 || n_rows <= 0) return;
  constexpr int kPassTokens = 2 * kPassPairs;
  for (int c0 = 0; c0 < nc; c0 += kPassTokens) {
    const int n = std::min(kPassTokens, nc - c0);
    const int8_t* tok[kPassTokens];
    for (int i = 0; i < kPassTokens; ++i)
      tok[i] = i < n ? a.qs + static_cast<size_t>(c0 + i) * a.stride : nullptr;
    int32x4_t acc[kPassPairs][8];
    if (n > 2)
      tile<2>(w, kp, tok, acc);
    else
      tile<1>(w, kp, tok, acc);
    for (int i = 0; i < n; ++i) {
      const int p = i / 2;
      const float32x4_t sa = vdupq_n_f32(a.scale[c0 + i]);
      float out[16];
      for (int q = 0; q < 4; ++q) {
        // Even lanes are token 2p's rows 4q, 4q+1 (then 4q+2, 4q+3), odd lanes token 2p + 1's.
        const int32x4_t dot = i % 2 == 0 ? vuzp1q_s32(acc[p][2 * q], acc[p][2 * q + 1])
                                         : vuzp2q_s32(acc[p][2 * q], acc[p][2 * q + 1]);
        vst1q_f32(out + 4 * q, vmulq_f32(vcvtq_f32_s32(dot), vmulq_f32(sa, vld1q_f32(w_scale + 4 * q))));
      }
      std::memcpy(y + static_cast<size_t>(c0 + i) * y_stride, out,
                  static_cast<size_t>(n_rows) * sizeof(float));
    }
  }
}

}  // namespace strata::cpu
