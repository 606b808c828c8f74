// The interleaved ("packed") weight layout of the legacy quantized types and its kernels.
//
// Rows are taken 16 at a time (a group). A group is stored block after block (32 elements per
// block); one packed block holds the 16 rows' scales, then their quants interleaved 4 bytes at a
// time so that one 64-byte load is "the same 4 quants of 16 rows":
//   Q4_0: d[16] fp16 | qs chunk k=0..3: row r -> source qs[4k..4k+3]                    288 bytes
//   Q4_1: d[16] | m[16] | qs as Q4_0                                                    320 bytes
//   Q5_0: d[16] | qs as Q4_0 | qh: 8 x u64, bit 4r+i of mask k = bit 4k+i of row r's qh  352 bytes
//   Q5_1: d[16] | m[16] | qs | qh as Q5_0                                               384 bytes
//   Q8_0: d[16] | qs chunk k=0..7: row r -> source qs[4k..4k+3] XOR 0x80 (q + 128)       544 bytes
//   IQ4_NL: as Q4_0 (the nibbles index kIq4nlValues)                                    288 bytes
//   MXFP4: as IQ4_NL with kMxfp4Values; d is the exact fp16 of
//     2^(e - 128), so a block costs 18 bytes for the source's 17 (packable_data)        288 bytes
//   Q4_K, one packed block per 256-column super-block:
//     d[16] fp16 | dmin[16] fp16 | sc[8][16] u8 | m[8][16] u8 | 8 x qs as Q4_0         2368 bytes
//     the 6-bit scales and mins unpacked (row r of 32-column sub-block j at [16 j + r]), so
//     element e of sub-block j is d * sc[j] * u - dmin * m[j]: exactly the GGUF value, as
//     Q4_1 with a scale d * sc and a min -dmin * m that the kernels form per sub-block.
//   Q5_K: Q4_K's super-block with each sub-block's quants followed by
//     Q5_0's fifth-bit masks (8 x u64)                                                2880 bytes
//   IQ4_XS, one packed block per 256-column super-block:
//     d[16] fp16 | sc[8][16] i8 | 8 x qs as IQ4_NL                                     2208 bytes
//     sc is the sub-block's 6-bit scale minus 32, so element e of sub-block j is
//     d * sc[j] * kIq4nlValues[nibble]: IQ4_NL with a scale d * sc per sub-block.
//   Q6_K, one packed block per 256-column super-block:
//     d[16] fp16 | sc[16][16] i8 | 8 x (ql[256] as Q4_0 | qh[2][64])                  3360 bytes
//     sc[h][r]: row r's scale of 16-column half h (sub-block h / 2, element half h % 2). Quant u
//     (0..63) of element e of a sub-block: its low 4 bits are Q4_0's nibble of e in ql; its high
//     2 bits are bits 2k..2k+1 of byte 4r + e % 4 of plane e / 16, k = e % 16 / 4. The value is
//     d * sc * (u - 32): the kernels remove the 32 with the activation's per-half sums.
//   Q3_K, one packed block per 256-column super-block:
//     d[16] fp16 | sc[16][16] i8 | 8 x (lo[2][64] | hi[64])                           1824 bytes
//     sc as Q6_K's (the 6-bit scale - 32). Quant u (0..7) of element e of a sub-block: its low 2
//     bits are bits 2k..2k+1 of byte 4r + e % 4 of lo plane e / 16 (k = e % 16 / 4), its third
//     bit (GGUF's hmask bit) is bit 4 (e / 16) + k of that byte of hi. The value is
//     d * sc * (u - 4), the 4 removed as Q6_K's 32.
//   Q2_K, one packed block per 256-column super-block:
//     d[16] fp16 | dmin[16] fp16 | sc[16][16] u8 | 8 x lo[2][64] as Q3_K's               1344 bytes
//     sc: GGUF's byte (scale | min << 4) of each half; the value is d * scale * u - dmin * min,
//     the min multiplied by the activation's half sum.
// Weight register k (k = 0..7) holds elements 4k..4k+3 of 16 rows as unsigned bytes: for the
// 4-bit types the low nibbles of chunk k (k < 4) or the high nibbles of chunk k - 4 (elements
// 16 + 4(k-4) = 4k), plus 16 where the fifth bit is set for the 5-bit types; for IQ4_NL the nibble
// is looked up as u = kIq4nlValues[nibble] + 128 (MXFP4: kMxfp4Values). The element value is
// d * (u - zero_point) with zero_point 8 (Q4_0), 16 (Q5_0), 128 (Q8_0, IQ4_NL, IQ4_XS, MXFP4), or
// d * u + m for Q4_1/Q5_1.
// Rows past n_out in the last group are zero (scale 0). Each packed block of the legacy types is
// exactly 16 source blocks, so the copy costs no memory beyond the source; Q4_K's costs 2.8% more
// (2368 bytes for 16 x 144), Q5_K's 2.3% (2880 for 16 x 176) and IQ4_XS's 1.5% (2208 for
// 16 x 136), the price of scales that need no unpacking in the inner loop; Q6_K's is exactly the
// source's (3360 for 16 x 210), Q2_K's too (1344 for 16 x 84), Q3_K's 3.6% more (1824 for
// 16 x 110). The super-block kinds' activations are the same 32-blocks (Q8_1-style for Q4_K and
// Q5_K, Q8_0-style for the others): one act block per sub-block; at the levels whose set asks for
// it, a super-block's 8 blocks share one scale (is_super_act_mode).
//
// Activations are quantized per 32-block exactly as Q8_0/Q8_1 (d = amax / 127, q = round(x / d))
// into column tiles of kPackCols tokens: tile t, block b, slot c (token 12t + c) at
//   qs  + ((t * nb + b) * kPackCols + c) * 32      meta + (t * nb + b) * kPackCols + c
// so that a kernel reaches every token of its tile at a constant offset from one pointer.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "core/cpu_features.h"
#include "core/tensor_type.h"

namespace strata::cpu {

constexpr int kPackRows = 16;  // rows per group
constexpr int kPackCols = 12;  // tokens per activation tile (the widest kernel call)

bool packable_type(TensorType type);
// Whether this matrix ([n_out] rows of n_in columns, row_stride bytes apart) of a packable type
// can be repacked: MXFP4's scales must be exact fp16s (2^-24 .. 2^15); a matrix with others keeps
// its rows.
bool packable_data(TensorType type, const void* data, size_t row_stride, int64_t n_in, int64_t n_out);
// One 32-column block of 16 rows (the K-quants and IQ4_XS: an eighth of a super-block). A group of nb blocks
// is nb * packed_block_bytes bytes.
size_t packed_block_bytes(TensorType type);
// The zero point the activation quantizer removes: 8, 16, 128 (Q8_0, IQ4_NL, IQ4_XS), 0 for the
// types with a min, kPackedHalfSums for Q6_K, Q3_K and Q2_K (their 32, 4 or min are removed per
// 16-column half).
int packed_zero_point(TensorType type);
constexpr int kPackedHalfSums = -1;
// Q4_K and Q5_K at the levels whose set asks for it (PackedKernelSet::act_mode): one scale
// per 256-column super-block, so a kernel keeps a super-block's integer sums (its 8 sub-blocks'
// scaled sums and its min sums) in int32 and scales them once per 256 columns instead of per 32,
// as llama.cpp's Q8_K does. Every sub-block's meta carries the super-block's d (a float, not
// rounded) and the quant sums of its sub-block pair (pair_sum). The quantizer is then given
// whole super-blocks (n_blocks a multiple of 8, x at a super-block's start). IQ4_XS at AVX2 takes
// the same activations (its values are signed, so it has no use for the sums).
constexpr int kPackedSuperSums = -2;
// Q6_K, Q3_K and Q2_K where the set asks for it: one scale per super-block as kPackedSuperSums, each block's
// extra its half sums (as kPackedHalfSums), from which the kernels remove the 32 or 4 of every 16-column half
// (Q2_K: form its mins' sum).
constexpr int kPackedSuperHalfSums = -3;
// Whether the activations of a mode carry one scale per 256-column super-block.
constexpr bool is_super_act_mode(int mode) {
  return mode == kPackedSuperSums || mode == kPackedSuperHalfSums;
}

// Writes group g of src ([n_out] rows of type, nb 32-column blocks each, src_row_stride bytes
// apart) into dst ([nb] packed blocks), zero rows past n_out.
void repack_group(TensorType type, const uint8_t* src, size_t src_row_stride, int64_t n_out, int64_t g,
                  int64_t nb, uint8_t* dst);

// Per activation block: what the kernels need beside the quants (8 bytes, so that a tile of 12
// tokens' quants and metadata stays within L1 while 16 rows of weights pass over it).
struct PackedActMeta {
  float d;        // scale, rounded to fp16 as Q8_0's (is_super_act_mode: the super-block's, unrounded)
  int32_t extra;  // zero_point > 0: -zero_point * sum(q), the integer accumulator's start value;
                  // zero_point == 0 (Q4_1/Q5_1/Q4_K/Q5_K): the bits of float fp16(d * sum(q)), Q8_1's s;
                  // kPackedHalfSums: sum(q[0..15]) in the low 16 bits, sum(q[16..31]) above;
                  // kPackedSuperSums: sub-block j's is sum(q) of sub-block j & ~1 in the low 16 bits,
                  // of j | 1 above (an int16 pair, the vpmaddwd operand of the mins);
                  // kPackedSuperHalfSums: as kPackedHalfSums
};
static_assert(sizeof(PackedActMeta) == 8);

// The extra of kPackedHalfSums and its two sums (each within +-16 * 127).
constexpr int32_t pack_half_sums(int32_t lo, int32_t hi) {
  return static_cast<int32_t>((static_cast<uint32_t>(hi) << 16) | (static_cast<uint32_t>(lo) & 0xffffu));
}
constexpr int32_t half_sum_lo(int32_t extra) {
  return static_cast<int16_t>(extra & 0xffff);
}
constexpr int32_t half_sum_hi(int32_t extra) {
  return extra >> 16;
}
// The sum of the activation's element half hh (0: q[0..15], 1: q[16..31]).
constexpr int32_t half_sum(int32_t extra, int hh) {
  return hh == 0 ? half_sum_lo(extra) : half_sum_hi(extra);
}
// kPackedSuperSums: the sum of sub-block j's quants from the extra of either sub-block of its pair.
constexpr int32_t pair_sum(int32_t extra, int j) {
  return half_sum(extra, j & 1);
}
// Q6_K, Q3_K: -zero_point * half_sum, the start of that half's integer sum, which makes it the
// exact sum of (u - zero_point) * a.
constexpr int32_t half_sum_bias(int32_t extra, int hh, int zero_point) {
  return -zero_point * half_sum(extra, hh);
}

// The activations of one column tile of tokens.
struct PackedActTile {
  const int8_t* qs;           // [nb, kPackCols, 32]
  const PackedActMeta* meta;  // [nb, kPackCols]
  bool super_sums = false;    // one scale per super-block (is_super_act_mode(set.act_mode(type)))
};

// x: [n_blocks * 32] f32 of one token -> its slots: block b's quants at qs + b * qs_block_stride,
// its meta at meta[b * meta_block_stride]. Every level's quantizer is bit-identical to the scalar
// one (same amax, same d, same x * (1 / d) rounded to nearest even).
using PackedActQuantizer = void (*)(const float* x, int64_t n_blocks, int zero_point, int8_t* qs,
                                    size_t qs_block_stride, PackedActMeta* meta, size_t meta_block_stride);
void quantize_packed_act_scalar(const float* x, int64_t n_blocks, int zero_point, int8_t* qs,
                                size_t qs_block_stride, PackedActMeta* meta, size_t meta_block_stride);
void quantize_packed_act_avx2(const float* x, int64_t n_blocks, int zero_point, int8_t* qs,
                              size_t qs_block_stride, PackedActMeta* meta, size_t meta_block_stride);
void quantize_packed_act_avx512(const float* x, int64_t n_blocks, int zero_point, int8_t* qs,
                                size_t qs_block_stride, PackedActMeta* meta, size_t meta_block_stride);
void quantize_packed_act_neon(const float* x, int64_t n_blocks, int zero_point, int8_t* qs,
                              size_t qs_block_stride, PackedActMeta* meta, size_t meta_block_stride);

// y[c * y_stride + r] = dot(row r of the group, token c) for r < n_rows (<= 16), c < nc
// (<= kPackCols). w: one group ([nb] packed blocks); a: the token tile.
// Batch invariance (kernels.h): at one level, an output's bits do not depend on nc, n_rows or the
// token's slot in the tile.
using PackedGemmFn = void (*)(TensorType type, const uint8_t* w, int64_t nb, const PackedActTile& a, int nc,
                              float* y, size_t y_stride, int n_rows);
void packed_gemm_scalar(TensorType type, const uint8_t* w, int64_t nb, const PackedActTile& a, int nc,
                        float* y, size_t y_stride, int n_rows);
// AVX2 (vpmaddubsw, no VNNI), AVX-VNNI (256-bit vpdpbusd), AVX-512 VNNI, AMX.
void packed_gemm_avx2(TensorType type, const uint8_t* w, int64_t nb, const PackedActTile& a, int nc, float* y,
                      size_t y_stride, int n_rows);
void packed_gemm_avxvnni(TensorType type, const uint8_t* w, int64_t nb, const PackedActTile& a, int nc,
                         float* y, size_t y_stride, int n_rows);
void packed_gemm_avx512(TensorType type, const uint8_t* w, int64_t nb, const PackedActTile& a, int nc,
                        float* y, size_t y_stride, int n_rows);
// AMX-INT8 tiles (one tdpbsud per block), bit-identical to the AVX-512 level. packed_gemm_amx runs
// the AVX-512 kernel for the few-token calls where the tiles are slower (packed_gemm_amx.cpp);
// packed_gemm_amx_tiles always runs the tiles (the tests compare it at every token count).
void packed_gemm_amx(TensorType type, const uint8_t* w, int64_t nb, const PackedActTile& a, int nc, float* y,
                     size_t y_stride, int n_rows);
void packed_gemm_amx_tiles(TensorType type, const uint8_t* w, int64_t nb, const PackedActTile& a, int nc,
                           float* y, size_t y_stride, int n_rows);
// aarch64: NEON (smull/sadalp), DotProd (sdot by lane), I8MM (usmmla 2x8 by 8x2 tiles).
void packed_gemm_neon(TensorType type, const uint8_t* w, int64_t nb, const PackedActTile& a, int nc, float* y,
                      size_t y_stride, int n_rows);
void packed_gemm_dotprod(TensorType type, const uint8_t* w, int64_t nb, const PackedActTile& a, int nc,
                         float* y, size_t y_stride, int n_rows);
void packed_gemm_i8mm(TensorType type, const uint8_t* w, int64_t nb, const PackedActTile& a, int nc, float* y,
                      size_t y_stride, int n_rows);

// The interleaved kernels of one ISA level.
struct PackedKernelSet {
  IsaLevel level;
  PackedActQuantizer quantize;
  PackedGemmFn gemm;
  // The activation mode its quantizer is given for a type, which its gemm requires:
  // packed_zero_point(type), or one scale per super-block (kPackedSuperSums for Q4_K and Q5_K at
  // AVX2 and AVX-VNNI and for IQ4_XS at AVX2, kPackedSuperHalfSums for Q6_K, Q3_K and Q2_K at AVX2).
  int (*act_mode)(TensorType type);
};
inline int packed_act_mode(TensorType type, const PackedKernelSet& set) {
  return set.act_mode(type);
}
// The set for `isa`: its own level's, else the first one below it on its chain that the CPU
// supports (the scalar set at the bottom).
const PackedKernelSet& packed_kernels(IsaLevel isa);

}  // namespace strata::cpu
