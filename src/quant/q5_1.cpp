// Q5_1: blocks of 32, x = d * q + m with q 5-bit packed as Q5_0. Quantizer as Q4_1.
#include <cstring>

#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/scale_search.h"

namespace strata::quant {
namespace {

constexpr int kNmax = 31;

}  // namespace

void dequantize_q5_1(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ5_1*>(src);  // [n / 32]
  for (int64_t b = 0; b < n / kQK; ++b) {
    const BlockQ5_1& x = blocks[b];
    const float d = fp16_to_f32(x.d);
    const float m = fp16_to_f32(x.m);
    uint32_t qh;
    std::memcpy(&qh, x.qh, sizeof qh);
    float* y = dst + b * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = (x.qs[j] & 0xF) | (((qh >> j) & 1) << 4);
      const int hi = (x.qs[j] >> 4) | (((qh >> (j + kQK / 2)) & 1) << 4);
      y[j] = lo * d + m;
      y[j + kQK / 2] = hi * d + m;
    }
  }
}

void quantize_q5_1(const float* src, void* dst, int64_t n, const float* importance) {
  auto* blocks = static_cast<BlockQ5_1*>(dst);  // [n / 32]
  float x[kQK], w[kQK];
  int L[kQK];
  for (int64_t b = 0; b < n / kQK; ++b) {
    sanitize_block(src + b * kQK, x, kQK);
    block_weights(importance ? importance + b * kQK : nullptr, w, kQK);
    const AffineFit fit = search_affine(x, w, kQK, kNmax, false, L);
    BlockQ5_1& y = blocks[b];
    finalize_affine(x, w, kQK, kNmax, fit, &y.d, &y.m, L);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = L[j], hi = L[j + kQK / 2];
      y.qs[j] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      qh |= static_cast<uint32_t>(lo >> 4) << j;
      qh |= static_cast<uint32_t>(hi >> 4) << (j + kQK / 2);
    }
    std::memcpy(y.qh, &qh, sizeof qh);
  }
}

}  // namespace strata::quant
