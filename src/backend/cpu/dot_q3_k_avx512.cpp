// Q3_K x Q8_K dot products for AVX-512 (F, BW, VNNI).
//
// Per super-block and 64-element chunk: the 3-bit quants are widened to unsigned bytes
// q' = q + 4 in [0, 7] (2 low bits | high bit << 2), vpmaddubsw multiplies them with the int8
// activations into int16 pair sums, and vpdpwssd multiplies those by the signed 6-bit scale of
// their 16-element sub-block and accumulates in int32. The +4 bias is removed exactly with the
// activation's bsums (-4 * scale * bsum), then the sums are scaled by d_w * d_a in float.
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

constexpr size_t kBlockBytes = sizeof(BlockQ3_K);
// The preferred register tile: the best GEMM throughput among the shapes measured on Zen 4
// (also tried: 4x4, 3x8, 4x8, 8x1); GEMV (3 x 1 tiles) was within noise of the others.
constexpr int kTileR = 3;
constexpr int kTileC = 4;

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
  __m512i hm2;        // [64] bytes: hmask, then hmask >> 1 (bit 2k: high bit for chunk k)
  __m512i scales;     // int16 lanes 0..15: signed sub-block scales in [-32, 31]
  __m512i offsets;    // int16 lanes 0..15: -4 * scales; lanes 16..31: 0
  float d;
};

static inline Row load_row(const uint8_t* blk) {
  Row row;
  row.d = load_half(blk + offsetof(BlockQ3_K, d));
  row.qs = blk + offsetof(BlockQ3_K, qs);
  const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + offsetof(BlockQ3_K, hmask)));
  row.hm2 = _mm512_inserti64x4(_mm512_castsi256_si512(hm), _mm256_srli_epi16(hm, 1), 1);
  const __m256i sc16 = _mm256_cvtepi8_epi16(unpack_q3_scales(blk));
  row.scales = _mm512_zextsi256_si512(sc16);
  row.offsets = _mm512_zextsi256_si512(_mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc16, 2)));
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

// q' = low 2 bits + 4 * high bit, in [0, 7]: the high bit of element 128h + 32j + l is bit
// 4h + j of hmask[l], i.e. bit 2k of hm2 for both halves of chunk k.
static inline __m512i chunk_quants(const Row& row, int k) {
  const __m512i low = two_bit_quants(row.qs, k);
  const __mmask64 high = _mm512_test_epi8_mask(row.hm2, _mm512_set1_epi8(static_cast<char>(1 << (2 * k))));
  return _mm512_mask_add_epi8(low, high, low, _mm512_set1_epi8(4));
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

const TypeKernels& q3_k_kernels_avx512() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_avx512,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = gemm_tile,
                                       .tile_rows = kTileR,
                                       .tile_cols = kTileC};
  return kernels;
}

}  // namespace strata::cpu
