// Per-element grids and level packing of the quantized block layouts (quant/blocks.h). Each
// type's decode mirrors its dequantizer's float expression; the packing mirrors its quantizer.
#include "quant/block_grid.h"

#include <cmath>
#include <cstring>

#include "core/check.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace strata {
namespace {

// The value tables as floats (exact small integers).
struct FloatTables {
  float iq4nl[16];
  float mxfp4[16];
  FloatTables() {
    for (int i = 0; i < 16; ++i) {
      iq4nl[i] = static_cast<float>(kIq4nlValues[i]);
      mxfp4[i] = static_cast<float>(kMxfp4Values[i]);
    }
  }
};
const FloatTables& tables() {
  static const FloatTables t;
  return t;
}

ElementGrid integer_grid(float scale, float offset, int bias, int n_levels) {
  ElementGrid g;
  g.scale = scale;
  g.offset = offset;
  g.bias = bias;
  g.n_levels = n_levels;
  return g;
}

ElementGrid table_grid(float scale, const float* table) {
  ElementGrid g;
  g.scale = scale;
  g.n_levels = 16;
  g.table = table;
  return g;
}

// ---- Legacy 32-blocks: Q4_0 / Q4_1 / IQ4_NL / MXFP4 nibbles, Q5 fifth bits, Q8_0 bytes.

void nibbles_to_levels(const uint8_t* qs, int* levels) {  // qs: [16]
  for (int j = 0; j < 16; ++j) {
    levels[j] = qs[j] & 0xF;
    levels[j + 16] = qs[j] >> 4;
  }
}

void levels_to_nibbles(const int* levels, uint8_t* qs) {
  for (int j = 0; j < 16; ++j)
    qs[j] = static_cast<uint8_t>((levels[j] & 0xF) | ((levels[j + 16] & 0xF) << 4));
}

void q5_levels(const uint8_t* qs, const uint8_t* qh_bytes, int* levels) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, sizeof qh);
  nibbles_to_levels(qs, levels);
  for (int j = 0; j < 32; ++j) levels[j] |= static_cast<int>((qh >> j) & 1) << 4;
}

void set_q5_levels(const int* levels, uint8_t* qs, uint8_t* qh_bytes) {
  levels_to_nibbles(levels, qs);
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j) qh |= static_cast<uint32_t>((levels[j] >> 4) & 1) << j;
  std::memcpy(qh_bytes, &qh, sizeof qh);
}

// ---- K-quant level layouts.

// Q2_K / Q3_K low bits: within each half of 128, byte l holds elements l, l+32, l+64, l+96.
int q2_bits(const uint8_t* qs, int e) {
  return (qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

void set_q2_bits(uint8_t* qs, const int* low2) {  // low2: [256] values in [0, 3]
  for (int half = 0; half < 2; ++half)
    for (int l = 0; l < 32; ++l) {
      const int* L = low2 + half * 128;
      qs[half * 32 + l] = static_cast<uint8_t>((L[l] & 3) | ((L[l + 32] & 3) << 2) | ((L[l + 64] & 3) << 4) |
                                               ((L[l + 96] & 3) << 6));
    }
}

// Q4_K / Q5_K nibbles: each 64 elements share 32 bytes, the first 32 in the low nibbles.
int q4k_nibble(const uint8_t* qs, int e) {
  return (qs[(e / 64) * 32 + e % 32] >> (4 * ((e % 64) / 32))) & 0xF;
}

void set_q4k_nibbles(uint8_t* qs, const int* levels) {
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      qs[c * 32 + l] =
          static_cast<uint8_t>((levels[c * 64 + l] & 0xF) | ((levels[c * 64 + 32 + l] & 0xF) << 4));
}

// Q6_K: per half of 128, element l + 32k: low nibble in ql[l + 32 (k % 2)] (k < 2 low nibble),
// top two bits in bits 2k of qh[l].
int q6k_level(const BlockQ6_K& x, int e) {
  const int half = e / 128, k = (e % 128) / 32, l = e % 32;
  const uint8_t low_byte = x.ql[half * 64 + l + 32 * (k % 2)];
  const int low = k < 2 ? (low_byte & 0xF) : (low_byte >> 4);
  const int high = (x.qh[half * 32 + l] >> (2 * k)) & 3;
  return low | (high << 4);
}

void set_q6k_levels(BlockQ6_K& y, const int* levels) {
  for (int half = 0; half < 2; ++half) {
    const int* q = levels + half * 128;
    for (int l = 0; l < 32; ++l) {
      y.ql[half * 64 + l] = static_cast<uint8_t>((q[l] & 0xF) | ((q[l + 64] & 0xF) << 4));
      y.ql[half * 64 + l + 32] = static_cast<uint8_t>((q[l + 32] & 0xF) | ((q[l + 96] & 0xF) << 4));
      y.qh[half * 32 + l] =
          static_cast<uint8_t>(((q[l] >> 4) & 3) | (((q[l + 32] >> 4) & 3) << 2) |
                               (((q[l + 64] >> 4) & 3) << 4) | (((q[l + 96] >> 4) & 3) << 6));
    }
  }
}

// TQ1_0: 5 trits per byte (most significant first), stored as ceil(256 * value / 243).
uint8_t pack_trits(const int* t, int k) {
  int v = 0;
  for (int n = 0; n < 5; ++n) v = 3 * v + (n < k ? t[n] : 0);
  return static_cast<uint8_t>((v * 256 + 242) / 243);
}

void tq1_levels(const BlockTQ1_0& x, int* levels) {
  for (int t = 0; t < 5; ++t)
    for (int m = 0; m < 32; ++m) levels[32 * t + m] = tq1_trit(x.qs[m], t);
  for (int t = 0; t < 5; ++t)
    for (int m = 0; m < 16; ++m) levels[160 + 16 * t + m] = tq1_trit(x.qs[32 + m], t);
  for (int t = 0; t < 4; ++t)
    for (int j = 0; j < 4; ++j) levels[240 + 4 * t + j] = tq1_trit(x.qh[j], t);
}

void set_tq1_levels(BlockTQ1_0& y, const int* levels) {
  int t[5];
  for (int m = 0; m < 32; ++m) {
    for (int k = 0; k < 5; ++k) t[k] = levels[32 * k + m];
    y.qs[m] = pack_trits(t, 5);
  }
  for (int m = 0; m < 16; ++m) {
    for (int k = 0; k < 5; ++k) t[k] = levels[160 + 16 * k + m];
    y.qs[32 + m] = pack_trits(t, 5);
  }
  for (int j = 0; j < 4; ++j) {
    for (int k = 0; k < 4; ++k) t[k] = levels[240 + 4 * k + j];
    y.qh[j] = pack_trits(t, 4);
  }
}

// TQ2_0: element 128 c + 32 l + m in bits 2l of qs[32 c + m].
int tq2_level(const BlockTQ2_0& x, int e) {
  return (x.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

void set_tq2_levels(BlockTQ2_0& y, const int* levels) {
  for (int c = 0; c < 2; ++c)
    for (int m = 0; m < 32; ++m) {
      int byte = 0;
      for (int l = 0; l < 4; ++l) byte |= (levels[128 * c + 32 * l + m] & 3) << (2 * l);
      y.qs[32 * c + m] = static_cast<uint8_t>(byte);
    }
}

void k4_grids(const uint8_t* scales, float d, float dmin, int n_levels, ElementGrid* grids) {
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    unpack_k4_scale_min(scales, j, &sc, &m);
    const float dl = d * sc, ml = dmin * m;
    for (int l = 0; l < 32; ++l) grids[j * 32 + l] = integer_grid(dl, -ml, 0, n_levels);
  }
}

}  // namespace

bool has_block_grid(TensorType type) {
  switch (type) {
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::Q8_0:
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
    case TensorType::IQ4_NL:
    case TensorType::IQ4_XS:
    case TensorType::MXFP4:
    case TensorType::TQ1_0:
    case TensorType::TQ2_0:
      return true;
    default:
      return false;
  }
}

void block_grids(TensorType type, const void* block, ElementGrid* g) {
  switch (type) {
    case TensorType::Q4_0: {
      const auto& x = *static_cast<const BlockQ4_0*>(block);
      for (int j = 0; j < kQK; ++j) g[j] = integer_grid(fp16_to_f32(x.d), 0.0f, -8, 16);
      return;
    }
    case TensorType::Q4_1: {
      const auto& x = *static_cast<const BlockQ4_1*>(block);
      for (int j = 0; j < kQK; ++j) g[j] = integer_grid(fp16_to_f32(x.d), fp16_to_f32(x.m), 0, 16);
      return;
    }
    case TensorType::Q5_0: {
      const auto& x = *static_cast<const BlockQ5_0*>(block);
      for (int j = 0; j < kQK; ++j) g[j] = integer_grid(fp16_to_f32(x.d), 0.0f, -16, 32);
      return;
    }
    case TensorType::Q5_1: {
      const auto& x = *static_cast<const BlockQ5_1*>(block);
      for (int j = 0; j < kQK; ++j) g[j] = integer_grid(fp16_to_f32(x.d), fp16_to_f32(x.m), 0, 32);
      return;
    }
    case TensorType::Q8_0: {
      const auto& x = *static_cast<const BlockQ8_0*>(block);
      for (int j = 0; j < kQK; ++j) g[j] = integer_grid(fp16_to_f32(x.d), 0.0f, -127, 255);
      return;
    }
    case TensorType::Q2_K: {
      const auto& x = *static_cast<const BlockQ2_K*>(block);
      const float d = fp16_to_f32(x.d), dmin = fp16_to_f32(x.dmin);
      for (int e = 0; e < kQK_K; ++e) {
        const uint8_t sc = x.scales[e / 16];
        g[e] = integer_grid(d * (sc & 0xF), -(dmin * (sc >> 4)), 0, 4);
      }
      return;
    }
    case TensorType::Q3_K: {
      const auto& x = *static_cast<const BlockQ3_K*>(block);
      const float d = fp16_to_f32(x.d);
      int8_t sc[16];
      unpack_q3_k_scales(x.scales, sc);
      for (int e = 0; e < kQK_K; ++e) g[e] = integer_grid(d * sc[e / 16], 0.0f, -4, 8);
      return;
    }
    case TensorType::Q4_K: {
      const auto& x = *static_cast<const BlockQ4_K*>(block);
      k4_grids(x.scales, fp16_to_f32(x.d), fp16_to_f32(x.dmin), 16, g);
      return;
    }
    case TensorType::Q5_K: {
      const auto& x = *static_cast<const BlockQ5_K*>(block);
      k4_grids(x.scales, fp16_to_f32(x.d), fp16_to_f32(x.dmin), 32, g);
      return;
    }
    case TensorType::Q6_K: {
      const auto& x = *static_cast<const BlockQ6_K*>(block);
      const float d = fp16_to_f32(x.d);
      for (int e = 0; e < kQK_K; ++e) g[e] = integer_grid(d * x.scales[e / 16], 0.0f, -32, 64);
      return;
    }
    case TensorType::IQ4_NL: {
      const auto& x = *static_cast<const BlockIQ4_NL*>(block);
      for (int j = 0; j < kQK; ++j) g[j] = table_grid(fp16_to_f32(x.d), tables().iq4nl);
      return;
    }
    case TensorType::IQ4_XS: {
      const auto& x = *static_cast<const BlockIQ4_XS*>(block);
      const float d = fp16_to_f32(x.d);
      for (int ib = 0; ib < 8; ++ib) {
        const float dl = d * static_cast<float>(iq4_xs_scale(x.scales_h, x.scales_l, ib));
        for (int l = 0; l < 32; ++l) g[ib * 32 + l] = table_grid(dl, tables().iq4nl);
      }
      return;
    }
    case TensorType::MXFP4: {
      const auto& x = *static_cast<const BlockMXFP4*>(block);
      for (int j = 0; j < kQK; ++j) g[j] = table_grid(mxfp4_scale(x.e), tables().mxfp4);
      return;
    }
    case TensorType::TQ1_0: {
      const auto& x = *static_cast<const BlockTQ1_0*>(block);
      for (int e = 0; e < kQK_K; ++e) g[e] = integer_grid(fp16_to_f32(x.d), 0.0f, -1, 3);
      return;
    }
    case TensorType::TQ2_0: {
      const auto& x = *static_cast<const BlockTQ2_0*>(block);
      for (int e = 0; e < kQK_K; ++e) g[e] = integer_grid(fp16_to_f32(x.d), 0.0f, -1, 3);
      return;
    }
    default:
      STRATA_CHECK(false, "no block grid for ", type_name(type));
  }
}

void block_levels(TensorType type, const void* block, int* L) {
  switch (type) {
    case TensorType::Q4_0:
      return nibbles_to_levels(static_cast<const BlockQ4_0*>(block)->qs, L);
    case TensorType::Q4_1:
      return nibbles_to_levels(static_cast<const BlockQ4_1*>(block)->qs, L);
    case TensorType::IQ4_NL:
      return nibbles_to_levels(static_cast<const BlockIQ4_NL*>(block)->qs, L);
    case TensorType::MXFP4:
      return nibbles_to_levels(static_cast<const BlockMXFP4*>(block)->qs, L);
    case TensorType::Q5_0: {
      const auto& x = *static_cast<const BlockQ5_0*>(block);
      return q5_levels(x.qs, x.qh, L);
    }
    case TensorType::Q5_1: {
      const auto& x = *static_cast<const BlockQ5_1*>(block);
      return q5_levels(x.qs, x.qh, L);
    }
    case TensorType::Q8_0: {
      const auto& x = *static_cast<const BlockQ8_0*>(block);
      for (int j = 0; j < kQK; ++j) L[j] = x.qs[j] + 127;
      return;
    }
    case TensorType::Q2_K: {
      const auto& x = *static_cast<const BlockQ2_K*>(block);
      for (int e = 0; e < kQK_K; ++e) L[e] = q2_bits(x.qs, e);
      return;
    }
    case TensorType::Q3_K: {
      const auto& x = *static_cast<const BlockQ3_K*>(block);
      for (int e = 0; e < kQK_K; ++e) L[e] = q2_bits(x.qs, e) | (((x.hmask[e % 32] >> (e / 32)) & 1) << 2);
      return;
    }
    case TensorType::Q4_K: {
      const auto& x = *static_cast<const BlockQ4_K*>(block);
      for (int e = 0; e < kQK_K; ++e) L[e] = q4k_nibble(x.qs, e);
      return;
    }
    case TensorType::Q5_K: {
      const auto& x = *static_cast<const BlockQ5_K*>(block);
      for (int e = 0; e < kQK_K; ++e) L[e] = q4k_nibble(x.qs, e) | (((x.qh[e % 32] >> (e / 32)) & 1) << 4);
      return;
    }
    case TensorType::Q6_K: {
      const auto& x = *static_cast<const BlockQ6_K*>(block);
      for (int e = 0; e < kQK_K; ++e) L[e] = q6k_level(x, e);
      return;
    }
    case TensorType::IQ4_XS: {
      const auto& x = *static_cast<const BlockIQ4_XS*>(block);
      for (int ib = 0; ib < 8; ++ib) nibbles_to_levels(x.qs + 16 * ib, L + 32 * ib);
      return;
    }
    case TensorType::TQ1_0:
      return tq1_levels(*static_cast<const BlockTQ1_0*>(block), L);
    case TensorType::TQ2_0: {
      const auto& x = *static_cast<const BlockTQ2_0*>(block);
      for (int e = 0; e < kQK_K; ++e) L[e] = tq2_level(x, e);
      return;
    }
    default:
      STRATA_CHECK(false, "no block grid for ", type_name(type));
  }
}

void set_block_levels(TensorType type, void* block, const int* L) {
  switch (type) {
    case TensorType::Q4_0:
      return levels_to_nibbles(L, static_cast<BlockQ4_0*>(block)->qs);
    case TensorType::Q4_1:
      return levels_to_nibbles(L, static_cast<BlockQ4_1*>(block)->qs);
    case TensorType::IQ4_NL:
      return levels_to_nibbles(L, static_cast<BlockIQ4_NL*>(block)->qs);
    case TensorType::MXFP4:
      return levels_to_nibbles(L, static_cast<BlockMXFP4*>(block)->qs);
    case TensorType::Q5_0: {
      auto& y = *static_cast<BlockQ5_0*>(block);
      return set_q5_levels(L, y.qs, y.qh);
    }
    case TensorType::Q5_1: {
      auto& y = *static_cast<BlockQ5_1*>(block);
      return set_q5_levels(L, y.qs, y.qh);
    }
    case TensorType::Q8_0: {
      auto& y = *static_cast<BlockQ8_0*>(block);
      for (int j = 0; j < kQK; ++j) y.qs[j] = static_cast<int8_t>(L[j] - 127);
      return;
    }
    case TensorType::Q2_K:
      return set_q2_bits(static_cast<BlockQ2_K*>(block)->qs, L);
    case TensorType::Q3_K: {
      auto& y = *static_cast<BlockQ3_K*>(block);
      set_q2_bits(y.qs, L);
      std::memset(y.hmask, 0, sizeof y.hmask);
      for (int e = 0; e < kQK_K; ++e)
        y.hmask[e % 32] = static_cast<uint8_t>(y.hmask[e % 32] | (((L[e] >> 2) & 1) << (e / 32)));
      return;
    }
    case TensorType::Q4_K:
      return set_q4k_nibbles(static_cast<BlockQ4_K*>(block)->qs, L);
    case TensorType::Q5_K: {
      auto& y = *static_cast<BlockQ5_K*>(block);
      set_q4k_nibbles(y.qs, L);
      std::memset(y.qh, 0, sizeof y.qh);
      for (int e = 0; e < kQK_K; ++e)
        y.qh[e % 32] = static_cast<uint8_t>(y.qh[e % 32] | (((L[e] >> 4) & 1) << (e / 32)));
      return;
    }
    case TensorType::Q6_K:
      return set_q6k_levels(*static_cast<BlockQ6_K*>(block), L);
    case TensorType::IQ4_XS: {
      auto& y = *static_cast<BlockIQ4_XS*>(block);
      for (int ib = 0; ib < 8; ++ib) levels_to_nibbles(L + 32 * ib, y.qs + 16 * ib);
      return;
    }
    case TensorType::TQ1_0:
      return set_tq1_levels(*static_cast<BlockTQ1_0*>(block), L);
    case TensorType::TQ2_0:
      return set_tq2_levels(*static_cast<BlockTQ2_0*>(block), L);
    default:
      STRATA_CHECK(false, "no block grid for ", type_name(type));
  }
}

int nearest_level(const ElementGrid& g, float x) {
  if (std::isnan(x)) x = 0.0f;
  int lo = 0, hi = g.n_levels - 1;
  if (!g.table && g.scale != 0.0f && std::isfinite(g.scale)) {
    // The rounded estimate and its neighbours; the exact comparison below settles ties.
    const double t = (static_cast<double>(x) - g.offset) / g.scale - g.bias;
    const double c = std::nearbyint(std::fmin(std::fmax(t, -1.0), static_cast<double>(g.n_levels)));
    const int l = static_cast<int>(c);
    lo = std::max(0, l - 1);
    hi = std::min(g.n_levels - 1, l + 1);
  }
  int best = lo;
  double best_d = INFINITY;
  for (int l = lo; l <= hi; ++l) {
    const double d = std::fabs(static_cast<double>(x) - static_cast<double>(grid_value(g, l)));
    if (d < best_d) {
      best_d = d;
      best = l;
    }
  }
  return best;
}

}  // namespace strata
