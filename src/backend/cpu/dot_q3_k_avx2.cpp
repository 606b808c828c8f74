// Q3_K x Q8_K dot products for AVX2 (+FMA, F16C).//
// Per super-block and 32-element chunk: the quants are widened to unsigned bytes q' = q + 4 in
// [0, 7], vpmaddubsw multiplies them with the int8 activations into int16 pair sums and vpmaddwd
// with the sub-block scale into exact int32 sums. Once per super-block the sums are scaled by
// d_w * d_a in float; the +4 bias is removed exactly with the activation's bsums.
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

constexpr size_t kBlockBytes = sizeof(BlockQ3_K);
// The preferred register tile: the best GEMM throughput among the shapes measured on Zen 4
// (also tried: 2x2, 2x4, 4x2, 3x2); GEMV (3 x 1 tiles) was within noise of the others.
constexpr int kTileR = 3;
constexpr int kTileC = 3;

// 16 signed 6-bit scales (see blocks.h) -> int8 x16 in [-32, 31]. Scale j has its low nibble
// in byte j (j < 8) or the high nibble of byte j - 8, its top 2 bits in bits 2 * (j / 4) of
// byte 8 + j % 4. Loads the 16 bytes ending at d (inside the block) and drops the first two.
static inline __m128i unpack_q3_scales(const uint8_t* blk) {
  const __m128i raw =
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(BlockQ3_K, scales) - 2));
  const __m128i s = _mm_srli_si128(raw, 2);  // dwords s0 s1 s2: the 12 scale bytes
  // Low nibbles: dwords [s0, s1, s0 >> 4, s1 >> 4] & 0x0f.
  const __m128i low = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(s, 0x44), _mm_setr_epi32(0, 0, 4, 4)),
                                    _mm_set1_epi8(0x0f));
  // Top bits to bits 4-5: dword q takes bits 2q..2q+1 of every byte of s2 (shift right first:
  // shifting left first would lose the top byte's bits).
  const __m128i high =
      _mm_and_si128(_mm_slli_epi32(_mm_srlv_epi32(_mm_shuffle_epi32(s, 0xaa), _mm_setr_epi32(0, 2, 4, 6)), 4),
                    _mm_set1_epi8(0x30));
  return _mm_sub_epi8(_mm_or_si128(low, high), _mm_set1_epi8(32));
}

// One weight super-block, ready for the chunk loop.
struct Row {
  const uint8_t* qs;  // [64] low 2 bits
  __m256i hmask;      // [32] high bits: bit k of byte l for element 32k + l
  __m256i scales;     // int16 x16: signed sub-block scales in [-32, 31]
  __m256i offsets;    // int16 x16: -4 * scales
  float d;
};

static inline Row load_row(const uint8_t* blk) {
  Row row;
  row.d = load_half(blk + offsetof(BlockQ3_K, d));
  row.qs = blk + offsetof(BlockQ3_K, qs);
  row.hmask = loadu_256(blk + offsetof(BlockQ3_K, hmask));
  row.scales = _mm256_cvtepi8_epi16(unpack_q3_scales(blk));
  row.offsets = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(row.scales, 2));
  return row;
}

// Unsigned 2-bit quants of elements 32k..32k+31: element 128h + 32j + l sits in bits 2j..2j+1
// of qs[32h + l] (h = k / 4, j = k % 4).
static inline __m256i two_bit_quants(const uint8_t* qs, int k) {
  const __m256i x = loadu_256(qs + 32 * (k / 4));
  return _mm256_and_si256(_mm256_srli_epi16(x, 2 * (k % 4)), _mm256_set1_epi8(3));
}

// q' = low 2 bits + 4 * high bit, in [0, 7]; the high bit of element 32k + l is bit k of hmask[l].
static inline __m256i chunk_quants(const Row& row, int k) {
  const __m256i high = _mm256_and_si256(shift_bytes(row.hmask, 2 - k), _mm256_set1_epi8(4));
  return _mm256_or_si256(two_bit_quants(row.qs, k), high);
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

const TypeKernels& q3_k_kernels_avx2() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_avx2,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = gemm_tile,
                                       .tile_rows = kTileR,
                                       .tile_cols = kTileC};
  return kernels;
}

}  // namespace strata::cpu
