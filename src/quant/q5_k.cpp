// Q5_K: as Q4_K with 5-bit q: the fifth bit of element 64 c + l (l < 32) is bit 2c of qh[l],
// of element 64 c + 32 + l bit 2c + 1.
#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/kquant_search.h"

namespace strata::quant {
namespace {

constexpr AffineKSpec kSpec = {32, 31, 63};

}  // namespace

void dequantize_q5_k(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ5_K*>(src);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockQ5_K& x = blocks[b];
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
      for (int l = 0; l < 32; ++l) {
        const int level = ((q[l] >> shift) & 0xF) + (((x.qh[l] >> j) & 1) << 4);
        y[j * 32 + l] = dl * level - ml;
      }
    }
  }
}

void quantize_q5_k(const float* src, void* dst, int64_t n, const float* importance) {
  auto* blocks = static_cast<BlockQ5_K*>(dst);  // [n / 256]
  float x[kQK_K];
  AffineKBlock r;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    sanitize_block(src + b * kQK_K, x, kQK_K);
    quantize_affine_k(kSpec, x, importance ? importance + b * kQK_K : nullptr, &r);
    BlockQ5_K& y = blocks[b];
    y.d = r.d;
    y.dmin = r.dmin;
    pack_k4_scale_min(r.sc, r.m, y.scales);
    for (int l = 0; l < 32; ++l) y.qh[l] = 0;
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int lo = r.L[c * 64 + l], hi = r.L[c * 64 + 32 + l];
        y.qs[c * 32 + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
        y.qh[l] = static_cast<uint8_t>(y.qh[l] | ((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
    }
  }
}

}  // namespace strata::quant
