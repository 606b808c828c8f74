// NEON W8A8 activation quantization (w8a8_kernels.h), used by every aarch64 level: 16 floats
// per step, the last < 16 through the scalar formula (w8a8_quant_one). AArch64's fmax returns
// NaN when either input is NaN, where std::max(a, NaN) returns a, so the max and the clamps
// are compare-and-select in the scalar code's order instead; fcvtns rounds to nearest, ties to
// even, as nearbyint in the default rounding mode.
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/w8a8_kernels.h"

namespace strata::cpu {
namespace {

// std::max(acc, v): v where acc < v, else acc (NaN v: acc).
static inline float32x4_t max_like_std(float32x4_t acc, float32x4_t v) {
  return vbslq_f32(vcltq_f32(acc, v), v, acc);
}

static inline float abs_max(const float* x, int64_t n) {
  float32x4_t m0 = vdupq_n_f32(0.0f), m1 = vdupq_n_f32(0.0f);
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    m0 = max_like_std(m0, vabsq_f32(vld1q_f32(x + k)));
    m1 = max_like_std(m1, vabsq_f32(vld1q_f32(x + k + 4)));
  }
  float lanes[8];
  vst1q_f32(lanes, m0);
  vst1q_f32(lanes + 4, m1);
  float r = 0.0f;
  for (float v : lanes) r = std::max(r, v);
  for (; k < n; ++k) r = std::max(r, std::fabs(x[k]));
  return r;
}

// 4 quants of x * id: std::min(127, std::max(-127, v)) as selects (NaN: -127), then fcvtns.
static inline int32x4_t quant4(const float* x, float32x4_t id) {
  const float32x4_t v = vmulq_f32(vld1q_f32(x), id);
  const float32x4_t lo = vdupq_n_f32(-127.0f), hi = vdupq_n_f32(127.0f);
  const float32x4_t c = vbslq_f32(vcltq_f32(lo, v), v, lo);
  return vcvtnq_s32_f32(vbslq_f32(vcltq_f32(c, hi), c, hi));
}

}  // namespace

float w8a8_quantize_act_neon(const float* x, int64_t n_in, int64_t kp, float static_absmax, int8_t* q,
                             int32_t* sum) {
  const float amax = static_absmax > 0.0f ? static_absmax : abs_max(x, n_in);
  const float d = amax / 127.0f;
  const float idf = d > 0.0f ? 1.0f / d : 0.0f;
  const float32x4_t id = vdupq_n_f32(idf);
  int32x4_t s = vdupq_n_s32(0);
  int64_t k = 0;
  for (; k + 16 <= n_in; k += 16) {
    const int32x4_t v0 = quant4(x + k, id), v1 = quant4(x + k + 4, id);
    const int32x4_t v2 = quant4(x + k + 8, id), v3 = quant4(x + k + 12, id);
    s = vaddq_s32(s, vaddq_s32(vaddq_s32(v0, v1), vaddq_s32(v2, v3)));
    const int16x8_t h0 = vcombine_s16(vmovn_s32(v0), vmovn_s32(v1));
    const int16x8_t h1 = vcombine_s16(vmovn_s32(v2), vmovn_s32(v3));
    vst1q_s8(q + k, vcombine_s8(vmovn_s16(h0), vmovn_s16(h1)));
  }
  int32_t total = vaddvq_s32(s);  // |sum| <= 127 * kW8A8MaxK: no overflow
  for (; k < n_in; ++k) {
    const int v = w8a8_quant_one(x[k] * idf);
    q[k] = static_cast<int8_t>(v);
    total += v;
  }
  if (kp > n_in) std::memset(q + n_in, 0, static_cast<size_t>(kp - n_in));
  *sum = total;
  return d;
}

}  // namespace strata::cpu
