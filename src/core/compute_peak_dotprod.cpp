// Armv8.2 DotProd peak loop (compute_peak_kernels.h).
#include <arm_neon.h>

#include "core/compute_peak_kernels.h"

namespace strata::peak {

int64_t int8_chains_dotprod(int64_t iters) {
  int32x4_t acc[kPeakChains];
  for (int i = 0; i < kPeakChains; ++i) acc[i] = vdupq_n_s32(i);
  int8x16_t a = vdupq_n_s8(3), b = vdupq_n_s8(5);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kPeakChains; ++i) acc[i] = vdotq_s32(acc[i], a, b);
    __asm__ volatile("" : "+w"(a), "+w"(b));  // keeps the operands opaque to the optimizer
  }
  int32x4_t s = acc[0];
  for (int i = 1; i < kPeakChains; ++i) s = vaddq_s32(s, acc[i]);
  return vaddvq_s32(s);
}

}  // namespace strata::peak
