// Q5_K x Q8_K dot products for AVX-512 (F, BW, VNNI). Same scheme as dot_q4_k_avx512.cpp; the fifth
// bit of each quant is added from qh with a byte mask.
//
// Per super-block and 64-element chunk: the 5-bit quants are widened to bytes in element order,
// vpmaddubsw multiplies them with the int8 activations into int16 pair sums, and vpdpwssd
// multiplies those by the sub-block scale and accumulates in int32 (exact). Once per super-block
// the int32 sums are scaled by d_w * d_a in float, and the min term -dmin * m[s] * sum(a) comes
// from the activation's bsums. gemm_tile keeps a tile of R rows x C columns of accumulators in
// registers so each unpacked weight chunk is used C times and each activation chunk R times.
#include <immintrin.h>

// GCC 12's AVX-512 headers self-initialise their "undefined" vectors, which -Wall reports as
// uninitialised once inlined; the values are never used.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cstddef>
#include <cstring>

#include "backend/cpu/block_access.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/kquant_scale_min.h"
#include "backend/cpu/simd_avx2.h"
#include "quant/blocks.h"

namespace strata::cpu {

namespace {

constexpr size_t kBlockBytes = sizeof(BlockQ5_K);
// The preferred register tile: the best GEMM throughput among the shapes measured on Zen 4
// (also tried: 4x4, 3x8, 4x8, 8x1); GEMV (3 x 1 tiles) was within noise of the others.
constexpr int kTileR = 3;
constexpr int kTileC = 4;

// One weight super-block, ready for the chunk loop.
struct Row {
  const uint8_t* qs;  // [128] packed nibbles
  __m512i qh2;        // [64] bytes: qh, then qh >> 1 (bit 2k of byte i: fifth bit of chunk k)
  __m512i scales;     // int16 lanes 0..7: sub-block scales sc[0..7]
  __m512 mins;        // [16] -dmin * m[g / 2] for bsum group g (16 elements each)
  float d;
};

static inline Row load_row(const uint8_t* blk) {
  Row row;
  row.d = load_half(blk + offsetof(BlockQ5_K, d));
  const float dmin = load_half(blk + offsetof(BlockQ5_K, dmin));
  row.qs = blk + offsetof(BlockQ5_K, qs);
  const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + offsetof(BlockQ5_K, qh)));
  row.qh2 = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 1), 1);
  const __m128i scm = unpack_scale_min(blk + offsetof(BlockQ5_K, scales));
  row.scales = _mm512_zextsi128_si512(_mm_cvtepu8_epi16(scm));
  const __m512 m16 = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpackhi_epi8(scm, scm)));
  row.mins = _mm512_mul_ps(m16, _mm512_set1_ps(-dmin));
  return row;
}

// Unsigned quants of elements 64k..64k+63 in element order: low nibbles of qs[32k..32k+31]
// then their high nibbles, plus 16 where the element's bit in qh is set (bit 2k for the first
// 32 elements, 2k + 1 for the next 32).
static inline __m512i chunk_quants(const Row& row, int k) {
  const __m512i x =
      _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row.qs + 32 * k)));
  const __m512i shifted = _mm512_mask_srli_epi16(x, 0xffff0000u, x, 4);  // upper half: high nibbles
  const __m512i low = _mm512_and_si512(shifted, _mm512_set1_epi8(0x0f));
  const __mmask64 high = _mm512_test_epi8_mask(row.qh2, _mm512_set1_epi8(static_cast<char>(1 << (2 * k))));
  return _mm512_mask_add_epi8(low, high, low, _mm512_set1_epi8(16));
}

// int16 scale of every element pair of chunk k: sc[2k] for lanes 0..15, sc[2k+1] for 16..31.
static inline __m512i chunk_scales(const Row& row, int k) {
  const __m512i sel = _mm512_mask_blend_epi16(0xffff0000u, _mm512_set1_epi16(static_cast<short>(2 * k)),
                                              _mm512_set1_epi16(static_cast<short>(2 * k + 1)));
  return _mm512_permutexvar_epi16(sel, row.scales);
}

#include "backend/cpu/kquant_tile_avx512.inc"

}  // namespace

const TypeKernels& q5_k_kernels_avx512() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_avx512,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = gemm_tile,
                                       .tile_rows = kTileR,
                                       .tile_cols = kTileC};
  return kernels;
}

}  // namespace strata::cpu
