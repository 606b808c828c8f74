// Q2_K x Q8_K dot products for AVX-512 (F, BW, VNNI).
//
// Per super-block and 64-element chunk: the 2-bit quants are widened to bytes in element order,
// vpmaddubsw multiplies them with the int8 activations into int16 pair sums, and vpdpwssd
// multiplies those by the 4-bit scale of their 16-element sub-block and accumulates in int32
// (exact). Once per super-block the sums are scaled by d_w * d_a in float; the min term
// -dmin * m[g] * sum(a) comes from the activation's bsums. gemm_tile keeps R x C accumulators
// in registers so each unpacked weight chunk is used C times and each activation chunk R times.
#include <immintrin.h>

// GCC 12's AVX-512 headers self-initialise their "undefined" vectors, which -Wall reports as
// uninitialised once inlined; the values are never used.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cstddef>
#include <cstring>

#include "backend/cpu/block_access.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/simd_avx2.h"
#include "quant/blocks.h"

namespace strata::cpu {

namespace {

constexpr size_t kBlockBytes = sizeof(BlockQ2_K);
// The preferred register tile: the best GEMM throughput among the shapes measured on Zen 4
// (also tried: 4x4, 3x8, 4x8, 8x1); GEMV (3 x 1 tiles) was within noise of the others.
constexpr int kTileR = 3;
constexpr int kTileC = 4;

// One weight super-block, ready for the chunk loop.
struct Row {
  const uint8_t* qs;  // [64] 2-bit quants
  __m512i scales;     // int16 lanes 0..15: scales[s] & 0xF
  __m512 mins;        // [16] -dmin * (scales[g] >> 4)
  float d;
};

static inline Row load_row(const uint8_t* blk) {
  Row row;
  row.d = load_half(blk + offsetof(BlockQ2_K, d));
  const float dmin = load_half(blk + offsetof(BlockQ2_K, dmin));
  row.qs = blk + offsetof(BlockQ2_K, qs);
  const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(BlockQ2_K, scales)));
  const __m128i nib = _mm_set1_epi8(0x0f);
  row.scales = _mm512_zextsi256_si512(_mm256_cvtepu8_epi16(_mm_and_si128(sc, nib)));
  const __m128i m = _mm_and_si128(_mm_srli_epi16(sc, 4), nib);
  row.mins = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(m)), _mm512_set1_ps(-dmin));
  return row;
}

// Unsigned 2-bit quants of elements 64k..64k+63 in element order. Half h = k / 2 of the block
// keeps element 128h + 32j + l in bits 2j..2j+1 of qs[32h + l]; chunk k holds j = 2(k % 2) and
// j + 1.
static inline __m512i two_bit_quants(const uint8_t* qs, int k) {
  const __m512i x =
      _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * (k / 2))));
  const __m512i x2 = _mm512_mask_srli_epi16(x, 0xffff0000u, x, 2);  // upper half: next j
  const __m512i s = (k % 2) ? _mm512_srli_epi16(x2, 4) : x2;
  return _mm512_and_si512(s, _mm512_set1_epi8(3));
}

static inline __m512i chunk_quants(const Row& row, int k) {
  return two_bit_quants(row.qs, k);
}

// int16 scale of every element pair of chunk k: sub-blocks 4k..4k+3 of 16 elements, 8 lanes each.
static inline __m512i chunk_scales(const Row& row, int k) {
  const __m512i sub =
      _mm512_set_epi32(0x00030003, 0x00030003, 0x00030003, 0x00030003, 0x00020002, 0x00020002, 0x00020002,
                       0x00020002, 0x00010001, 0x00010001, 0x00010001, 0x00010001, 0, 0, 0, 0);
  return _mm512_permutexvar_epi16(_mm512_add_epi16(sub, _mm512_set1_epi16(static_cast<short>(4 * k))),
                                  row.scales);
}

#include "backend/cpu/kquant_tile_avx512.inc"

}  // namespace

const TypeKernels& q2_k_kernels_avx512() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_avx512,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = gemm_tile,
                                       .tile_rows = kTileR,
                                       .tile_cols = kTileC};
  return kernels;
}

}  // namespace strata::cpu
