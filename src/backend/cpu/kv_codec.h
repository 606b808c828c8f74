// Conversions between f32 and the KV cache element types (kv_layout.h), and the fixed rotation
// of quantized keys, one table per ISA level.
//
// The same portable source (kv_codec_impl.h) is compiled for baseline x86-64 (kv_codec.cpp, the
// scalar reference), AVX2 and AVX-512; Q8_0's wide groups use the explicit SIMD activation
// quantizers of the matmul (act_q8_0*.cpp), F16 the F16C/AVX-512 converters. Quantizers are
// round-to-nearest with at most a 41-candidate scale choice per group: they run for every token of
// every layer, so an exhaustive search (as the weight quantizers do) would cost more than the
// attention.
//
// Quantizers per 32-element group (d and m stored as fp16):
//   Q8_0    groups of at most 16 elements before their zero padding (heads of 8 or 16):
//           d = v / -(128 - delta), v the element of largest magnitude and delta the best of
//           {0, 1/8, ..., 5} by squared error (kv_quant_group.h), L = clamp(round(x / d), -128, 127);
//           wider groups d = amax / 127, q = round(x / d) (llama.cpp's quantize_row_q8_0, which is
//           delta = 1 alone), with the matmul's SIMD activation quantizers
//   Q4_0    d = v / -(8 - delta) with v the element of largest magnitude and delta the best of
//           {0, 1/8, ..., 1} by squared error, L = clamp(round(x / d), -8, 7)
//   Q5_0    as Q4_0 with 16 levels a side: d = v / -(16 - delta), L in [-16, 15]
//   Q4_1    d = (max - min) / 15, m = min, q = clamp(round((x - m) / d), 0, 15)
//   Q5_1    d = (max - min) / 31, as Q4_1 with 5 bits
//   IQ4_NL  the best of 15 candidate scales d = v / (-127 + k), k = -7..7, each with levels
//           nearest on the grid and its least-squares d, by squared error
//   KIVI4   Q4_1's quantizer; KIVI2 d = (max - min) / 3, 2 bits (per token, groups of 32)
// and per channel over the block's tokens for KIVI keys: d = (max - min) / (2^bits - 1), m = min.
// NaN is stored as the smallest level, +-inf and out-of-range values clamp to the block's range.
#pragma once

#include <cstdint>

#include "backend/kv_layout.h"
#include "core/cpu_features.h"

namespace strata::cpu {

struct KvCodecKernels {
  // x: [dim] f32 -> one token row of `type` (kv_tile_layout's row_bytes): a float V row, or
  // 32-element groups with the padding to padded_dim quantized as zeros.
  void (*quantize_row)(KvType type, const float* x, int32_t dim, void* dst);
  // One token row of `type` -> y: [padded_dim] f32 (float types: [dim]).
  void (*dequantize_row)(KvType type, const void* src, int32_t dim, float* y);
  // n_rows token rows, row_bytes apart -> y: [n_rows][y_stride], the first dim elements of each
  // (dim <= y_stride): the V tile of the attention.
  void (*dequantize_rows)(KvType type, const void* src, size_t row_bytes, int32_t dim, int32_t n_rows,
                          float* y, int32_t y_stride);
  // Float types only: x: [n] f32 -> [n] elements of `type`, and back.
  void (*from_f32)(KvType type, const float* x, void* dst, int64_t n);
  void (*to_f32)(KvType type, const void* src, float* y, int64_t n);
  // KIVI keys: the n (= block_size) values of one channel -> one group of kivi_channel_bytes, and
  // back to y: [n].
  void (*quantize_channel)(int bits, const float* x, int32_t n, void* dst);
  void (*dequantize_channel)(int bits, const void* src, int32_t n, float* y);
  // Interleaved keys (Q8_0, Q4_0; kv_layout.h): x: [dim] f32 -> token t of the tile (quantized as
  // quantize_row does), and token t of the tile -> y: [padded_dim] f32.
  void (*store_interleaved)(KvType type, const float* x, int32_t dim, int32_t block_size, int32_t t,
                            void* tile);
  void (*load_interleaved)(KvType type, const void* tile, int32_t dim, int32_t block_size, int32_t t,
                           float* y);
  // x: [dim] in place -> R x, with R the fixed orthogonal rotation of quantized keys: dim is split
  // into power-of-two sub-blocks, largest first (80 = 64 + 16, 576 = 512 + 64); each sub-block of
  // n is multiplied by H_n D / sqrt(n), H_n the Walsh-Hadamard matrix (H_n[i][j] =
  // (-1)^popcount(i & j)) and D a fixed diagonal of signs (kv_rotation_sign). R is orthogonal, so
  // (R q).(R k) = q.k; the signs keep a vector that is constant across channels from becoming one
  // spike.
  void (*rotate)(float* x, int32_t dim);
};

// The sign of element i in D (kv_codec.h): +1 or -1 from a fixed hash of i.
static inline float kv_rotation_sign(int32_t i) {
  return ((static_cast<uint32_t>(i) * 2654435761u) >> 31) ? -1.0f : 1.0f;
}

const KvCodecKernels& kv_codec_kernels(IsaLevel isa);
inline const KvCodecKernels& kv_codec_kernels() {
  return kv_codec_kernels(isa_level());
}

// Per-ISA tables (kv_codec.cpp, kv_codec_avx2.cpp, kv_codec_avx512.cpp).
const KvCodecKernels& kv_codec_kernels_scalar();
const KvCodecKernels& kv_codec_kernels_avx2();
const KvCodecKernels& kv_codec_kernels_avx512();

}  // namespace strata::cpu
