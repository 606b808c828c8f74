// Q4_K: super-blocks of 256 in 8 sub-blocks of 32, x = d * sc * q - dmin * m, q 4-bit, sc and m
// 6-bit (pack_k4_scale_min). Levels: each 64 elements share 32 bytes, the first 32 elements in
// the low nibbles, the next 32 in the high nibbles.
#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/kquant_search.h"

namespace strata::quant {
namespace {

constexpr AffineKSpec kSpec = {32, 15, 63};

}  // namespace

void dequantize_q4_k(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ4_K*>(src);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockQ4_K& x = blocks[b];
    const float d = fp16_to_f32(x.d);
    const float dmin = fp16_to_f32(x.dmin);
    float* y = dst + b * kQK_K;
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, m;
      unpack_k4_scale_min(x.scales, j, &sc, &m);
      const float dl = d * sc;
      const float ml = dmin * m;
      const uint8_t* q = x.qs + (j / 2) * 32;
      const int shift = (j % 2) * 4;
      for (int l = 0; l < 32; ++l) y[j * 32 + l] = dl * ((q[l] >> shift) & 0xF) - ml;
    }
  }
}

void quantize_q4_k(const float* src, void* dst, int64_t n, const float* importance) {
  auto* blocks = static_cast<BlockQ4_K*>(dst);  // [n / 256]
  float x[kQK_K];
  AffineKBlock r;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    sanitize_block(src + b * kQK_K, x, kQK_K);
    quantize_affine_k(kSpec, x, importance ? importance + b * kQK_K : nullptr, &r);
    BlockQ4_K& y = blocks[b];
    y.d = r.d;
    y.dmin = r.dmin;
    pack_k4_scale_min(r.sc, r.m, y.scales);
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l)
        y.qs[c * 32 + l] = static_cast<uint8_t>(r.L[c * 64 + l] | (r.L[c * 64 + 32 + l] << 4));
  }
}

}  // namespace strata::quant
