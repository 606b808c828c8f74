// The Q6_K block format for the AVX2-class K-quant tile (kquant_tile_avx2.inc): how a super-block
// unpacks into 32-element chunks of unsigned quants and int16 sub-block scales. Shared by
// dot_q6_k_avx2.cpp and dot_q6_k_avxvnni.cpp; internal linkage only (each includes its own copy,
// compiled for its ISA).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstring>

#include "backend/cpu/block_access.h"
#include "backend/cpu/simd_avx2.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

constexpr size_t kBlockBytes = sizeof(BlockQ6_K);
// The preferred register tile: the best GEMM throughput among the shapes measured on Zen 4
// (also tried: 2x2, 2x4, 4x2, 3x2); GEMV (3 x 1 tiles) was within noise of the others.
constexpr int kTileR = 3;
constexpr int kTileC = 3;

// One weight super-block, ready for the chunk loop.
struct Row {
  const uint8_t* ql;  // [128] low 4 bits
  const uint8_t* qh;  // [64] high 2 bits
  __m256i scales;     // int16 x16: sub-block scales
  __m256i offsets;    // int16 x16: -32 * scales
  float d;
};

static inline Row load_row(const uint8_t* blk) {
  Row row;
  row.d = load_half(blk + offsetof(BlockQ6_K, d));
  row.ql = blk + offsetof(BlockQ6_K, ql);
  row.qh = blk + offsetof(BlockQ6_K, qh);
  row.scales = _mm256_cvtepi8_epi16(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(BlockQ6_K, scales))));
  row.offsets = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(row.scales, 5));
  return row;
}

// q' = q + 32 of elements 32k..32k+31 (h = k / 4, g = k % 4): low nibble from
// ql[64h + 32(g % 2) + l] (low nibble for g < 2, high for g >= 2), top 2 bits from bits 2g..2g+1
// of qh[32h + l].
static inline __m256i chunk_quants(const Row& row, int k) {
  const int h = k / 4, g = k % 4;
  const __m256i l = loadu_256(row.ql + 64 * h + 32 * (g % 2));
  const __m256i low = _mm256_and_si256(g < 2 ? l : _mm256_srli_epi16(l, 4), _mm256_set1_epi8(0x0f));
  const __m256i high =
      _mm256_and_si256(shift_bytes(loadu_256(row.qh + 32 * h), 4 - 2 * g), _mm256_set1_epi8(0x30));
  return _mm256_or_si256(low, high);
}

// int16 scales of chunk k (32 elements = sub-blocks 2k, 2k+1 of 16): the dword holding both is
// broadcast, then each 128-bit lane picks its own word.
static inline __m256i chunk_scales(const Row& row, int k) {
  const __m256i pair = _mm256_permutevar8x32_epi32(row.scales, _mm256_set1_epi32(k));
  const __m256i pick = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,  //
                                        2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
  return _mm256_shuffle_epi8(pair, pick);
}

}  // namespace
}  // namespace strata::cpu
