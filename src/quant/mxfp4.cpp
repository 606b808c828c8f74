// MXFP4 (OCP microscaling FP4): blocks of 32, x = 2^(e - 128) * kMxfp4Values[q] (an E8M0
// exponent and E2M1 values stored doubled), q in Q4_0's nibble order. Quantizer: the exponents
// around the one that puts the largest magnitude at the top level (12), keeping the closest. The
// exponent stays <= 252 so that the largest decoded value, 12 * 2^124, is a finite float.
#include <cmath>

#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/iq_tables.h"
#include "quant/level_search.h"
#include "quant/scale_search.h"

namespace strata::quant {
namespace {

constexpr int kMaxExponent = 252;

}  // namespace

void dequantize_mxfp4(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockMXFP4*>(src);  // [n / 32]
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = mxfp4_scale(blocks[b].e);
    float* y = dst + b * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = kMxfp4Values[blocks[b].qs[j] & 0xF] * d;
      y[j + kQK / 2] = kMxfp4Values[blocks[b].qs[j] >> 4] * d;
    }
  }
}

void quantize_mxfp4(const float* src, void* dst, int64_t n, const float* importance) {
  auto* blocks = static_cast<BlockMXFP4*>(dst);  // [n / 32]
  const LevelTable& t = mxfp4_levels();
  float x[kQK], w[kQK];
  uint8_t q[kQK], cand[kQK];
  for (int64_t b = 0; b < n / kQK; ++b) {
    sanitize_block(src + b * kQK, x, kQK);
    block_weights(importance ? importance + b * kQK : nullptr, w, kQK);
    float amax = 0;
    for (float v : x) amax = std::fmax(amax, std::fabs(v));
    // 12 * 2^(e - 128) >= amax at e = ceil(log2(amax / 12)) + 128; one below clips the largest.
    int e0 = 0;
    if (amax > 0) e0 = static_cast<int>(std::ceil(std::log2(static_cast<double>(amax) / 12.0))) + 128;
    double best = INFINITY;
    int best_e = 0;
    for (int e = e0 - 1; e <= e0 + 1; ++e) {
      const int ec = e < 0 ? 0 : e > kMaxExponent ? kMaxExponent : e;
      const double err = rtn_levels(t, x, w, kQK, mxfp4_scale(static_cast<uint8_t>(ec)), cand);
      if (err < best) {
        best = err, best_e = ec;
        for (int j = 0; j < kQK; ++j) q[j] = cand[j];
      }
    }
    blocks[b].e = static_cast<uint8_t>(best_e);
    for (int j = 0; j < kQK / 2; ++j) blocks[b].qs[j] = static_cast<uint8_t>(q[j] | (q[j + kQK / 2] << 4));
  }
}

}  // namespace strata::quant
