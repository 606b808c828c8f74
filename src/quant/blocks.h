// Quantized block layouts, byte-for-byte as stored in GGUF files made by llama.cpp.
//
// Element i of a block is reconstructed as described next to each struct. Sizes are
// asserted so that a layout change can never silently break file compatibility.
#pragma once

#include <cstdint>

#include "core/fp16.h"

namespace strata {

constexpr int kQK = 32;     // elements per block of the legacy formats
constexpr int kQK_K = 256;  // elements per super-block of the K-quants
constexpr int kKScaleBytes = 12;

// x[i] = d * (q[i] - 8), q 4-bit: qs[j] low nibble = element j, high nibble = element j+16.
struct BlockQ4_0 {
  fp16_t d;
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

// x[i] = d * q[i] + m, same nibble order as Q4_0.
struct BlockQ4_1 {
  fp16_t d;
  fp16_t m;
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

// x[i] = d * (q[i] - 16), q 5-bit: low 4 bits as Q4_0, bit 4 of element j in bit j of qh (LE u32).
struct BlockQ5_0 {
  fp16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ5_0) == 22);

// x[i] = d * q[i] + m, 5-bit q packed as Q5_0.
struct BlockQ5_1 {
  fp16_t d;
  fp16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ5_1) == 24);

// x[i] = d * qs[i].
struct BlockQ8_0 {
  fp16_t d;
  int8_t qs[kQK];
};
static_assert(sizeof(BlockQ8_0) == 34);

// Activation format: x[i] = d * qs[i], s = d * sum(qs).
struct BlockQ8_1 {
  fp16_t d;
  fp16_t s;
  int8_t qs[kQK];
};
static_assert(sizeof(BlockQ8_1) == 36);

// 16 sub-blocks of 16: x = d * (scales[j] & 0xF) * q - dmin * (scales[j] >> 4), q 2-bit.
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  fp16_t d;
  fp16_t dmin;
};
static_assert(sizeof(BlockQ2_K) == 84);

// 16 sub-blocks of 16: x = d * (scale6[j] - 32) * (q - 4 * !hbit), q 2 low bits + hmask bit.
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[kKScaleBytes];  // 16 packed 6-bit scales
  fp16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110);

// 8 sub-blocks of 32: x = d * sc[j] * q - dmin * m[j], 6-bit sc/m packed in scales, q 4-bit.
struct BlockQ4_K {
  fp16_t d;
  fp16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 144);

// As Q4_K with a fifth bit per element in qh.
struct BlockQ5_K {
  fp16_t d;
  fp16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ5_K) == 176);

// 16 sub-blocks of 16: x = d * scales[j] * (q - 32), q 6-bit = 4 low bits (ql) + 2 high (qh).
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  fp16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210);

// Activation format for K-quant dot products: x = d * qs, bsums[j] = sum of qs in group j of 16.
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};
static_assert(sizeof(BlockQ8_K) == 292);

// ---- The IQ, ternary and MXFP4 types (ggml-common.h). Grids and value tables: quant/iq_tables.h.
// "kv" below is kIq4nlValues, "sign" the bit of the 8-element group's sign byte, grid[] the
// type's lattice of 8 (or 4) unsigned magnitudes per index.

// Blocks of 32: x = d * kv[q], q 4-bit in Q4_0's nibble order.
struct BlockIQ4_NL {
  fp16_t d;
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 18);

// 8 sub-blocks of 32: x = d * (ls - 32) * kv[q], ls 6-bit: low 4 bits in scales_l (sub-block j at
// nibble j % 2 of byte j / 2), high 2 bits at bits 2j of scales_h. q: each sub-block's 16 bytes in
// Q4_0's nibble order.
struct BlockIQ4_XS {
  fp16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQK_K / 64];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockIQ4_XS) == 136);

// Blocks of 32: x = 2^(e - 128) * fp4[q] (E8M0 scale, halved; fp4 = doubled E2M1 values), q in
// Q4_0's nibble order.
struct BlockMXFP4 {
  uint8_t e;
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockMXFP4) == 17);

// x = d * (t - 1), t a trit. Trit n (0..4) of byte b is floor(3 * (b * 3^n mod 256) / 256).
// qs[0..31] hold elements 32n + m, qs[32..47] elements 160 + 16n + m, qh[0..3] (4 trits each)
// elements 240 + 4n + j.
struct BlockTQ1_0 {
  uint8_t qs[(kQK_K - 4 * kQK_K / 64) / 5];
  uint8_t qh[kQK_K / 64];
  fp16_t d;
};
static_assert(sizeof(BlockTQ1_0) == 54);

// x = d * (q - 1), q 2-bit: element 128 c + 32 l + m in bits 2l of qs[32 c + m].
struct BlockTQ2_0 {
  uint8_t qs[kQK_K / 4];
  fp16_t d;
};
static_assert(sizeof(BlockTQ2_0) == 66);

// 8 sub-blocks of 32, each 8 bytes of qs: bytes 0..3 index grid iq2xxs (4 groups of 8), the u32 of
// bytes 4..7 holds 4 x 7 sign bits (ksigns) and the scale s in its top 4 bits:
// x = d * (0.5 + s) / 4 * grid * sign.
struct BlockIQ2_XXS {
  fp16_t d;
  uint16_t qs[kQK_K / 8];
};
static_assert(sizeof(BlockIQ2_XXS) == 66);

// qs[g]: 9-bit grid iq2xs index | 7 sign bits << 9 for group g of 8; 4-bit scale per 16 elements:
// x = d * (0.5 + s) / 4 * grid * sign.
struct BlockIQ2_XS {
  fp16_t d;
  uint16_t qs[kQK_K / 8];
  uint8_t scales[kQK_K / 32];
};
static_assert(sizeof(BlockIQ2_XS) == 74);

// 10-bit grid iq2s index per group of 8: qs[g] | 2 bits of qh[g / 4] << 8; 8 explicit sign bits
// per group (qs[32 + g]); scales as IQ2_XS.
struct BlockIQ2_S {
  fp16_t d;
  uint8_t qs[kQK_K / 4];
  uint8_t qh[kQK_K / 32];
  uint8_t scales[kQK_K / 32];
};
static_assert(sizeof(BlockIQ2_S) == 82);

// qs[0..63]: grid iq3xxs indices (4 elements each); qs[64..95]: per sub-block of 32 a u32 of
// 4 x 7 sign bits and the scale in the top 4 bits: x = d * (0.5 + s) / 2 * grid * sign.
struct BlockIQ3_XXS {
  fp16_t d;
  uint8_t qs[3 * kQK_K / 8];
};
static_assert(sizeof(BlockIQ3_XXS) == 98);

// 9-bit grid iq3s index per 4 elements (qs | one bit of qh << 8), 8 sign bits per 8 elements,
// 4-bit scale per 32: x = d * (1 + 2 s) * grid * sign.
struct BlockIQ3_S {
  fp16_t d;
  uint8_t qs[kQK_K / 4];
  uint8_t qh[kQK_K / 32];
  uint8_t signs[kQK_K / 8];
  uint8_t scales[kQK_K / 64];
};
static_assert(sizeof(BlockIQ3_S) == 110);

// 11-bit grid iq1s index per 8 elements (qs | 3 bits of qh << 8); qh[j] bits 12..14: scale s,
// bit 15: sign of delta. x = d * (2 s + 1) * (grid + delta), delta = +-1/8, grid in {-1, 0, 1}.
struct BlockIQ1_S {
  fp16_t d;
  uint8_t qs[kQK_K / 8];
  uint16_t qh[kQK_K / 32];
};
static_assert(sizeof(BlockIQ1_S) == 50);

// As IQ1_S with a 3-bit scale per 16 elements and a delta sign per 8; the fp16 super-block scale
// is spread over the top nibbles of the four u16 of scales.
struct BlockIQ1_M {
  uint8_t qs[kQK_K / 8];
  uint8_t qh[kQK_K / 16];
  uint8_t scales[kQK_K / 32];
};
static_assert(sizeof(BlockIQ1_M) == 56);

// ---- 6-bit sub-block scale packing (12 bytes), shared by the kernels and the quantizers ----

// Q4_K / Q5_K: 8 (scale, min) pairs of 6 bits. Pairs 0-3 sit in the low 6 bits of bytes 0-3
// (scale) and 4-7 (min); pairs 4-7 keep their low nibbles in bytes 8-11 (scale low, min high)
// and their top 2 bits in the spare top bits of bytes 0-3 (scale) and 4-7 (min).
static inline void unpack_k4_scale_min(const uint8_t* scales, int j, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

// sc, m: [8] values in [0, 63] -> out: [12] bytes.
static inline void pack_k4_scale_min(const uint8_t* sc, const uint8_t* m, uint8_t* out) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
}

// Q3_K: 16 scales of 6 bits, stored biased by 32. Low nibbles: scale j < 8 in the low nibble of
// byte j, scale j >= 8 in the high nibble of byte j - 8. Top 2 bits: byte 8 + j % 4, bits
// 2 * (j / 4). out: [16] signed scales in [-32, 31].
static inline void unpack_q3_k_scales(const uint8_t* scales, int8_t* out) {
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? (scales[j] & 0xF) : (scales[j - 8] >> 4);
    const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
    out[j] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
}

// sc: [16] signed scales in [-32, 31] -> out: [12] bytes.
static inline void pack_q3_k_scales(const int8_t* sc, uint8_t* out) {
  for (int j = 0; j < 12; ++j) out[j] = 0;
  for (int j = 0; j < 16; ++j) {
    const int biased = (sc[j] + 32) & 63;
    if (j < 8)
      out[j] = static_cast<uint8_t>(out[j] | (biased & 0xF));
    else
      out[j - 8] = static_cast<uint8_t>(out[j - 8] | ((biased & 0xF) << 4));
    out[8 + j % 4] = static_cast<uint8_t>(out[8 + j % 4] | ((biased >> 4) << (2 * (j / 4))));
  }
}

}  // namespace strata
