// Q5_0: blocks of 32, x = d * (q - 16) with q 5-bit (low nibbles as Q4_0, bit 4 of element j in
// bit j of the little-endian u32 qh). Quantizer: exact scale search of either sign.
#include <cstring>

#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/scale_search.h"

namespace strata::quant {
namespace {

constexpr int kNeg = 16, kPos = 15;
constexpr SearchWindow kWindow = {11.0, 17.0};

}  // namespace

void dequantize_q5_0(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ5_0*>(src);  // [n / 32]
  for (int64_t b = 0; b < n / kQK; ++b) {
    const BlockQ5_0& x = blocks[b];
    const float d = fp16_to_f32(x.d);
    uint32_t qh;
    std::memcpy(&qh, x.qh, sizeof qh);
    float* y = dst + b * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = (x.qs[j] & 0xF) | (((qh >> j) & 1) << 4);
      const int hi = (x.qs[j] >> 4) | (((qh >> (j + kQK / 2)) & 1) << 4);
      y[j] = (lo - 16) * d;
      y[j + kQK / 2] = (hi - 16) * d;
    }
  }
}

void quantize_q5_0(const float* src, void* dst, int64_t n, const float* importance) {
  auto* blocks = static_cast<BlockQ5_0*>(dst);  // [n / 32]
  float x[kQK], w[kQK];
  int L[kQK];
  for (int64_t b = 0; b < n / kQK; ++b) {
    sanitize_block(src + b * kQK, x, kQK);
    block_weights(importance ? importance + b * kQK : nullptr, w, kQK);
    const double d = search_signed_scale(x, w, kQK, kNeg, kPos, kWindow, L);
    BlockQ5_0& y = blocks[b];
    y.d = finalize_symmetric(x, w, kQK, kNeg, kPos, d, L);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = L[j] + 16, hi = L[j + kQK / 2] + 16;
      y.qs[j] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      qh |= static_cast<uint32_t>(lo >> 4) << j;
      qh |= static_cast<uint32_t>(hi >> 4) << (j + kQK / 2);
    }
    std::memcpy(y.qh, &qh, sizeof qh);
  }
}

}  // namespace strata::quant
