// Q6_K: super-blocks of 256 in 16 sub-blocks of 16, x = d * sc * (q - 32), q 6-bit, sc int8.
// Per half of 128 elements (ql 64 bytes, qh 32 bytes): for l < 32, element l + 32 k (k = 0..3)
// has its low nibble in ql[l + 32 (k % 2)] (k < 2: low nibble, else high nibble) and its top two
// bits in bits 2k of qh[l].
#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/kquant_search.h"

namespace strata::quant {
namespace {

constexpr SymmetricKSpec kSpec = {16, 32, 31, 128, 127, {22.0, 33.0}};

}  // namespace

void dequantize_q6_k(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ6_K*>(src);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockQ6_K& x = blocks[b];
    const float d = fp16_to_f32(x.d);
    float* y = dst + b * kQK_K;
    for (int e = 0; e < kQK_K; ++e) {
      const int half = e / 128, k = (e % 128) / 32, l = e % 32;
      const uint8_t low_byte = x.ql[half * 64 + l + 32 * (k % 2)];
      const int low = k < 2 ? (low_byte & 0xF) : (low_byte >> 4);
      const int high = (x.qh[half * 32 + l] >> (2 * k)) & 3;
      y[e] = d * x.scales[e / 16] * ((low | (high << 4)) - 32);
    }
  }
}

void quantize_q6_k(const float* src, void* dst, int64_t n, const float* importance) {
  auto* blocks = static_cast<BlockQ6_K*>(dst);  // [n / 256]
  float x[kQK_K];
  SymmetricKBlock r;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    sanitize_block(src + b * kQK_K, x, kQK_K);
    quantize_symmetric_k(kSpec, x, importance ? importance + b * kQK_K : nullptr, &r);
    BlockQ6_K& y = blocks[b];
    y.d = r.d;
    for (int j = 0; j < 16; ++j) y.scales[j] = r.sc[j];
    for (int half = 0; half < 2; ++half) {
      int q[128];
      for (int e = 0; e < 128; ++e) q[e] = r.L[half * 128 + e] + 32;
      for (int l = 0; l < 32; ++l) {
        y.ql[half * 64 + l] = static_cast<uint8_t>((q[l] & 0xF) | ((q[l + 64] & 0xF) << 4));
        y.ql[half * 64 + l + 32] = static_cast<uint8_t>((q[l + 32] & 0xF) | ((q[l + 96] & 0xF) << 4));
        y.qh[half * 32 + l] = static_cast<uint8_t>((q[l] >> 4) | ((q[l + 32] >> 4) << 2) |
                                                   ((q[l + 64] >> 4) << 4) | ((q[l + 96] >> 4) << 6));
      }
    }
  }
}

}  // namespace strata::quant
