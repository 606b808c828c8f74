// NEON peak loop (compute_peak_kernels.h).
#include <arm_neon.h>

#include "core/compute_peak_kernels.h"

namespace strata::peak {

float f32_chains_neon(int64_t iters) {
  float32x4_t acc[kPeakChains];
  for (int i = 0; i < kPeakChains; ++i) acc[i] = vdupq_n_f32(static_cast<float>(i));
  float32x4_t a = vdupq_n_f32(0.999f), b = vdupq_n_f32(1e-6f);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kPeakChains; ++i) acc[i] = vfmaq_f32(b, acc[i], a);
    __asm__ volatile("" : "+w"(a), "+w"(b));  // keeps the operands opaque to the optimizer
  }
  float32x4_t s = acc[0];
  for (int i = 1; i < kPeakChains; ++i) s = vaddq_f32(s, acc[i]);
  return vaddvq_f32(s);
}

}  // namespace strata::peak
