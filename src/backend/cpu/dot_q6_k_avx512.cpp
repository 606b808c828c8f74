// Q6_K x Q8_K dot products for AVX-512 (F, BW, VNNI).
//
// Per super-block and 64-element chunk: the 6-bit quants are widened to unsigned bytes
// q' = q + 32 in [0, 63], vpmaddubsw multiplies them with the int8 activations into int16 pair
// sums (<= 2 * 63 * 127, no saturation), and vpdpwssd multiplies those by the int8 scale of
// their 16-element sub-block and accumulates in int32. The +32 bias is removed exactly with the
// activation's bsums (-32 * scale * bsum), then the sums are scaled by d_w * d_a in float.
// gemm_tile keeps R x C accumulators in registers so each unpacked weight chunk is used C times
// and each activation chunk R times.
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

constexpr size_t kBlockBytes = sizeof(BlockQ6_K);
// The preferred register tile: the best GEMM throughput among the shapes measured on Zen 4
// (also tried: 4x4, 3x8, 4x8, 8x1); GEMV (3 x 1 tiles) was within noise of the others.
constexpr int kTileR = 3;
constexpr int kTileC = 4;

// One weight super-block, ready for the chunk loop.
struct Row {
  const uint8_t* ql;  // [128] low 4 bits
  const uint8_t* qh;  // [64] high 2 bits
  __m512i scales;     // int16 lanes 0..15: sub-block scales
  __m512i offsets;    // int16 lanes 0..15: -32 * scales; lanes 16..31: 0
  float d;
};

static inline Row load_row(const uint8_t* blk) {
  Row row;
  row.d = load_half(blk + offsetof(BlockQ6_K, d));
  row.ql = blk + offsetof(BlockQ6_K, ql);
  row.qh = blk + offsetof(BlockQ6_K, qh);
  const __m256i sc16 = _mm256_cvtepi8_epi16(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(BlockQ6_K, scales))));
  row.scales = _mm512_zextsi256_si512(sc16);
  row.offsets = _mm512_zextsi256_si512(_mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc16, 5)));
  return row;
}

// q' = q + 32 of elements 64k..64k+63 in element order. Half h = k / 2 of the block: element
// 128h + 32g + l has its low nibble in ql[64h + 32(g % 2) + l] (low nibble for g < 2, high for
// g >= 2) and its top 2 bits in bits 2g..2g+1 of qh[32h + l]; chunk k holds g = 2(k % 2), +1.
static inline __m512i chunk_quants(const Row& row, int k) {
  const int h = k / 2;
  const __m512i ql = _mm512_loadu_si512(row.ql + 64 * h);
  const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row.qh + 32 * h));
  const __m512i qh2 = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
  const __m512i nib = _mm512_set1_epi8(0x0f), top = _mm512_set1_epi8(0x30);
  if (k % 2 == 0)
    return _mm512_or_si512(_mm512_and_si512(ql, nib), _mm512_and_si512(_mm512_slli_epi16(qh2, 4), top));
  return _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), nib), _mm512_and_si512(qh2, top));
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

const TypeKernels& q6_k_kernels_avx512() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_avx512,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = gemm_tile,
                                       .tile_rows = kTileR,
                                       .tile_cols = kTileC};
  return kernels;
}

}  // namespace strata::cpu
