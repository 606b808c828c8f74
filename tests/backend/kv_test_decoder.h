// An independent decoder of the KV cache layouts, written from the format descriptions in
// backend/kv_layout.h and quant/blocks.h (not from the codecs), in double precision; and the
// rotation R of quantized keys from its definition (kv_codec.h) as an explicit matrix.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/backend.h"
#include "core/fp16.h"

namespace strata::kvtest {

inline double half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_f32(h);
}

// One 32-element group of a block-quantized type -> 32 values.
inline void decode_group(KvType type, const uint8_t* b, double* y) {
  const double d = half_at(b);
  auto nib = [&](const uint8_t* qs, int j) { return j < 16 ? qs[j] & 0xF : qs[j - 16] >> 4; };
  for (int j = 0; j < 32; ++j) {
    switch (type) {
      case KvType::Q8_0:
        y[j] = d * static_cast<int8_t>(b[2 + j]);
        break;
      case KvType::Q4_0:
        y[j] = d * (nib(b + 2, j) - 8);
        break;
      case KvType::IQ4_NL: {
        static const int kGrid[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                      1,    13,   25,  38,  53,  69,  89,  113};
        y[j] = d * kGrid[nib(b + 2, j)];
        break;
      }
      case KvType::Q4_1:
      case KvType::KIVI4:
        y[j] = d * nib(b + 4, j) + half_at(b + 2);
        break;
      case KvType::Q5_0: {
        uint32_t qh;
        std::memcpy(&qh, b + 2, 4);
        y[j] = d * (int(nib(b + 6, j) | (((qh >> j) & 1) << 4)) - 16);
        break;
      }
      case KvType::Q5_1: {
        uint32_t qh;
        std::memcpy(&qh, b + 4, 4);
        y[j] = d * int(nib(b + 8, j) | (((qh >> j) & 1) << 4)) + half_at(b + 2);
        break;
      }
      case KvType::KIVI2:
        y[j] = d * ((b[4 + j / 4] >> (2 * (j % 4))) & 3) + half_at(b + 2);
        break;
      default:
        y[j] = NAN;
    }
  }
}

inline size_t group_bytes(KvType type) {
  switch (type) {
    case KvType::Q8_0:
      return 34;
    case KvType::Q4_0:
      return 18;
    case KvType::IQ4_NL:
      return 18;
    case KvType::Q4_1:
      return 20;
    case KvType::KIVI4:
      return 20;
    case KvType::Q5_0:
      return 22;
    case KvType::Q5_1:
      return 24;
    case KvType::KIVI2:
      return 12;
    default:
      return 0;
  }
}

inline double float_at(KvType type, const uint8_t* p) {
  if (type == KvType::F32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return type == KvType::F16 ? fp16_to_f32(h) : bf16_to_f32(h);
}

// Element e of token t of the (block, head) K tile (is_k) or V tile, as the cache holds it. A
// staged block (KIVI, being filled) is read from the staging area.
inline double cache_element(const KvLayerView& kv, bool is_k, int32_t block, int32_t g, int32_t t,
                            int32_t e) {
  const KvType type = is_k ? kv.k_type : kv.v_type;
  const int32_t dim = is_k ? kv.head_dim : kv.v_dim(), bs = kv.block_size;
  const int32_t slot = kv.staging ? kv.staging->slot_of_block[block] : -1;
  const void* staged = is_k ? (kv.staging ? kv.staging->k : nullptr) : (kv.staging ? kv.staging->v : nullptr);
  if (slot >= 0 && staged) {
    const size_t tile = (size_t(slot) * kv.n_head_kv + g) * dim * bs;
    const size_t at = is_k ? tile + size_t(e) * bs + t : tile + size_t(t) * dim + e;
    return float_at(KvType::F16, static_cast<const uint8_t*>(staged) + 2 * at);
  }
  const size_t tile_bytes = is_k ? kv.k_layout().bytes : kv.v_layout().bytes;
  const auto* tile =
      static_cast<const uint8_t*>(is_k ? kv.k : kv.v) + (size_t(block) * kv.n_head_kv + g) * tile_bytes;
  if (type == KvType::F32 || type == KvType::F16 || type == KvType::BF16) {
    const size_t es = type == KvType::F32 ? 4 : 2;
    return float_at(type, tile + es * (is_k ? size_t(e) * bs + t : size_t(t) * dim + e));
  }
  if (is_k && (type == KvType::KIVI2 || type == KvType::KIVI4)) {
    const int bits = type == KvType::KIVI2 ? 2 : 4, per_byte = 8 / bits;
    const uint8_t* ch = tile + size_t(e) * (4 + size_t(bs) * bits / 8);
    const int q = (ch[4 + t / per_byte] >> (bits * (t % per_byte))) & ((1 << bits) - 1);
    return half_at(ch) * q + half_at(ch + 2);
  }
  const int32_t padded = (dim + 31) / 32 * 32, n_groups = padded / 32;
  if (is_k && (type == KvType::Q8_0 || type == KvType::Q4_0)) {
    // Interleaved: fp16 d[g][t], then Q8_0 int8 [g][8][t][4] (elements 32g + 4c + i) or Q4_0
    // bytes [g][4][t][4] (element 32g + 8c + i low nibble, 32g + 8c + 4 + i high, as q + 8).
    const int32_t g = e / 32, i = e % 32;
    const double d = half_at(tile + (size_t(g) * bs + t) * 2);
    const uint8_t* q = tile + size_t(n_groups) * bs * 2;
    if (type == KvType::Q8_0)
      return d * static_cast<int8_t>(q[((size_t(g) * 8 + i / 4) * bs + t) * 4 + i % 4]);
    const uint8_t b = q[((size_t(g) * 4 + i / 8) * bs + t) * 4 + i % 4];
    return d * (((i % 8) < 4 ? (b & 0xF) : (b >> 4)) - 8);
  }
  const uint8_t* row = tile + size_t(t) * (padded / 32) * group_bytes(type);
  double y[32];
  decode_group(type, row + size_t(e / 32) * group_bytes(type), y);
  return y[e % 32];
}

// Largest |x - decoded| a 32-element group of `type` allows for values x: [n]: half a step of its
// scale (a whole step of the largest scale Q4_0 / Q5_0 may choose, amax / (2^(bits-1) - 1): the
// element of opposite sign to the largest can be clipped by that), for IQ4_NL the 14 levels an element of the
// opposite sign to the largest can be clipped by (the grid ends at 113, not 127); plus the fp16 rounding of
// the scale and min. KIVI channels (n values across a block's tokens) follow the affine rule of their bits.
inline double group_bound(KvType type, const double* x, int n, bool kivi_channel = false) {
  double lo = INFINITY, hi = -INFINITY, amax = 0;
  for (int j = 0; j < n; ++j)
    lo = std::min(lo, x[j]), hi = std::max(hi, x[j]), amax = std::max(amax, std::fabs(x[j]));
  const double slack = 1e-3 * amax + 1e-6;
  if (kivi_channel) return (hi - lo) / (type == KvType::KIVI2 ? 3 : 15) * 0.5 + slack;
  switch (type) {
    case KvType::Q8_0:  // the coarsest of the error-minimising quantizer's grids: |v| / d = 123
      return amax / 123 * 0.5 + slack;
    case KvType::Q4_0:
      return amax / 8 + slack;
    case KvType::Q5_0:
      return amax / 16 + slack;
    case KvType::Q4_1:
    case KvType::KIVI4:
      return (hi - lo) / 15 * 0.5 + slack;
    case KvType::Q5_1:
      return (hi - lo) / 31 * 0.5 + slack;
    case KvType::KIVI2:
      return (hi - lo) / 3 * 0.5 + slack;
    case KvType::IQ4_NL:
      return amax * 15 / 115 + slack;
    case KvType::F16:
      return amax * 1e-3 + 1e-7;
    case KvType::BF16:
      return amax * 8e-3 + 1e-7;
    default:
      return 0;  // F32
  }
}

// R of kv_codec.h as a dim x dim matrix: blocks H_n D / sqrt(n), power-of-two sizes largest first.
inline std::vector<double> rotation_matrix(int32_t dim) {
  std::vector<double> r(size_t(dim) * dim, 0.0);
  for (int32_t off = 0; off < dim;) {
    int32_t n = 1;
    while (n * 2 <= dim - off) n *= 2;
    for (int32_t i = 0; i < n; ++i)
      for (int32_t j = 0; j < n; ++j) {
        const double h = (std::popcount(uint32_t(i & j)) % 2 ? -1.0 : 1.0) / std::sqrt(double(n));
        const double sign = ((uint32_t(off + j) * 2654435761u) >> 31) ? -1.0 : 1.0;
        r[size_t(off + i) * dim + off + j] = h * sign;
      }
    off += n;
  }
  return r;
}

}  // namespace strata::kvtest
