// Q8_K activation quantizer, scalar reference (the ground truth for the SIMD versions).
//
// Follows llama.cpp's quantize_row_q8_K so that logits stay within the calibration of its
// references: per block of 256, the element of largest magnitude (the first one on ties) maps to
// -127, i.e. iscale = -127 / max and d = 1 / iscale (d is negative when that element is positive),
// q = round-half-even(iscale * x). Hostile input never reaches undefined behaviour:
//  - a block whose largest magnitude is below kQ8KMinAmax (incl. all zero or all NaN) is stored
//    as d = 0, q = 0 (llama.cpp would overflow iscale to inf there);
//  - NaN elements quantize to 0 (their magnitude is ignored when finding the scale);
//  - an infinite element gives iscale = -0 and d = -inf or +inf, so the dot products become
//    inf/NaN and the problem stays visible downstream.
#include <cmath>
#include <cstring>

#include "backend/cpu/kernel_decls.h"
#include "core/check.h"
#include "quant/blocks.h"

namespace strata::cpu {

void quantize_row_q8_k_scalar(const float* x, void* y, int64_t n) {  // x: [n] -> y: [n / 256] blocks
  STRATA_CHECK(n % kQK_K == 0, "Q8_K row length ", n, " is not a multiple of 256");
  auto* out = static_cast<uint8_t*>(y);  // any alignment: blocks are built here and copied out
  for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    BlockQ8_K blk;
    float max = 0.0f;
    float amax = 0.0f;
    for (int j = 0; j < kQK_K; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (!(amax >= kQ8KMinAmax)) {
      blk.d = 0.0f;
      std::memset(blk.qs, 0, sizeof(blk.qs));
      std::memset(blk.bsums, 0, sizeof(blk.bsums));
      std::memcpy(out + b * sizeof(blk), &blk, sizeof(blk));
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK_K; ++j) {
      const float v = iscale * x[j];
      // |v| <= 127 for every finite element, so no clamp is needed; NaN (x NaN, or inf * -0)
      // becomes 0.
      blk.qs[j] = std::isnan(v) ? 0 : static_cast<int8_t>(std::nearbyint(v));
    }
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += blk.qs[16 * g + l];
      blk.bsums[g] = static_cast<int16_t>(sum);
    }
    blk.d = 1.0f / iscale;
    std::memcpy(out + b * sizeof(blk), &blk, sizeof(blk));
  }
}

}  // namespace strata::cpu
