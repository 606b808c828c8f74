// The Q5_K block format for the AVX2-class K-quant tile (kquant_tile_avx2.inc): how a super-block
// unpacks into 32-element chunks of unsigned quants and int16 sub-block scales. Shared by
// dot_q5_k_avx2.cpp and dot_q5_k_avxvnni.cpp; internal linkage only (each includes its own copy,
// compiled for its ISA).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstring>

#include "backend/cpu/block_access.h"
#include "backend/cpu/kquant_scale_min.h"
#include "backend/cpu/simd_avx2.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

constexpr size_t kBlockBytes = sizeof(BlockQ5_K);
// The preferred register tile: the best GEMM throughput among the shapes measured on Zen 4
// (also tried: 2x2, 2x4, 4x2, 3x2); GEMV (3 x 1 tiles) was within noise of the others.
constexpr int kTileR = 3;
constexpr int kTileC = 3;

// One weight super-block, ready for the chunk loop.
struct Row {
  const uint8_t* qs;  // [128] packed nibbles
  __m256i qh;         // [32] fifth bits: bit k of byte l for element 32k + l
  __m256i scales;     // int16 x8 sub-block scales, in both 128-bit lanes
  __m256i mins;       // int16 x16: m[g / 2] for bsum group g
  float d, neg_dmin;
};

static inline Row load_row(const uint8_t* blk) {
  Row row;
  row.d = load_half(blk + offsetof(BlockQ5_K, d));
  row.neg_dmin = -load_half(blk + offsetof(BlockQ5_K, dmin));
  row.qs = blk + offsetof(BlockQ5_K, qs);
  row.qh = loadu_256(blk + offsetof(BlockQ5_K, qh));
  const __m128i scm = unpack_scale_min(blk + offsetof(BlockQ5_K, scales));
  row.scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scm));
  const __m128i m8 = _mm_unpackhi_epi64(scm, scm);
  row.mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
  return row;
}

// Unsigned quants of elements 32k..32k+31: low (k even) or high (k odd) nibbles of
// qs[32(k/2)..], plus 16 where bit k of qh is set.
static inline __m256i chunk_quants(const Row& row, int k) {
  const __m256i x = loadu_256(row.qs + 32 * (k / 2));
  const __m256i low = _mm256_and_si256(k % 2 ? _mm256_srli_epi16(x, 4) : x, _mm256_set1_epi8(0x0f));
  return _mm256_or_si256(low, _mm256_and_si256(shift_bytes(row.qh, 4 - k), _mm256_set1_epi8(0x10)));
}

// int16 scale of chunk k (32 elements = sub-block k) in every lane.
static inline __m256i chunk_scales(const Row& row, int k) {
  const __m256i pick = _mm256_set1_epi16(static_cast<short>((2 * k) | ((2 * k + 1) << 8)));
  return _mm256_shuffle_epi8(row.scales, pick);
}

}  // namespace
}  // namespace strata::cpu
