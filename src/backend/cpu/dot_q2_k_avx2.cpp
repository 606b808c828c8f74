// Q2_K x Q8_K dot products for AVX2 (+FMA, F16C).//
// Per super-block and 32-element chunk: the quants are widened to unsigned bytes in element
// order, vpmaddubsw multiplies them with the int8 activations into int16 pair sums and vpmaddwd
// with the sub-block scale into exact int32 sums. Once per super-block the sums are scaled by
// d_w * d_a in float; the min term -dmin * m * sum(a) comes from the activation's bsums.
// gemm_tile keeps R x C accumulators in registers so each unpacked weight
// chunk is used C times and each activation chunk R times.
#include <immintrin.h>

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
// (also tried: 2x2, 2x4, 4x2, 3x2); GEMV (3 x 1 tiles) was within noise of the others.
constexpr int kTileR = 3;
constexpr int kTileC = 3;

// One weight super-block, ready for the chunk loop.
struct Row {
  const uint8_t* qs;  // [64] 2-bit quants
  __m256i scales;     // int16 x16: scales[s] & 0xF
  __m256i mins;       // int16 x16: scales[g] >> 4
  float d, neg_dmin;
};

static inline Row load_row(const uint8_t* blk) {
  Row row;
  row.d = load_half(blk + offsetof(BlockQ2_K, d));
  row.neg_dmin = -load_half(blk + offsetof(BlockQ2_K, dmin));
  row.qs = blk + offsetof(BlockQ2_K, qs);
  const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(BlockQ2_K, scales)));
  const __m128i nib = _mm_set1_epi8(0x0f);
  row.scales = _mm256_cvtepu8_epi16(_mm_and_si128(sc, nib));
  row.mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc, 4), nib));
  return row;
}

// Unsigned 2-bit quants of elements 32k..32k+31: element 128h + 32j + l sits in bits 2j..2j+1
// of qs[32h + l] (h = k / 4, j = k % 4).
static inline __m256i two_bit_quants(const uint8_t* qs, int k) {
  const __m256i x = loadu_256(qs + 32 * (k / 4));
  return _mm256_and_si256(_mm256_srli_epi16(x, 2 * (k % 4)), _mm256_set1_epi8(3));
}

static inline __m256i chunk_quants(const Row& row, int k) {
  return two_bit_quants(row.qs, k);
}

// int16 scales of chunk k (32 elements = sub-blocks 2k, 2k+1 of 16): the dword holding both is
// broadcast, then each 128-bit lane picks its own word.
static inline __m256i chunk_scales(const Row& row, int k) {
  const __m256i pair = _mm256_permutevar8x32_epi32(row.scales, _mm256_set1_epi32(k));
  const __m256i pick = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,  //
                                        2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
  return _mm256_shuffle_epi8(pair, pick);
}

#include "backend/cpu/kquant_tile_avx2.inc"

}  // namespace

const TypeKernels& q2_k_kernels_avx2() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_avx2,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = gemm_tile,
                                       .tile_rows = kTileR,
                                       .tile_cols = kTileC};
  return kernels;
}

}  // namespace strata::cpu
