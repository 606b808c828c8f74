// IQ3_S: f = d, sc = 2 s + 1 per chunk, w = grid * sign (8 gathered grid entries of 4, 9-bit indices).
// The block-format Ops of iq_tile_avx2.h, shared by dot_iq3_s_avx2.cpp and dot_iq3_s_avx512.cpp.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backend/cpu/iq_tile_avx2.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace strata::cpu {
namespace {

struct Ops {
  static constexpr size_t kBlockBytes = sizeof(BlockIQ3_S);
  static constexpr int kMaxAbsW = 15;  // the largest |w| of a chunk: grid bytes in {1, 3, ..., 15}
  struct Row {
    const uint8_t* blk;
    float f;
  };
  static Row load_row(const uint8_t* blk) { return {blk, load_half(blk + offsetof(BlockIQ3_S, d))}; }
  static void chunk_parts(const Row& row, int k, __m256i& mag, IqSigns& signs, __m256i& sc) {
    const uint8_t* qs = row.blk + offsetof(BlockIQ3_S, qs) + 8 * k;
    const int qh = row.blk[offsetof(BlockIQ3_S, qh) + k];
    uint32_t sign_bits;
    std::memcpy(&sign_bits, row.blk + offsetof(BlockIQ3_S, signs) + 4 * k, 4);
    // Entry i of the chunk takes bit i of qh as its ninth index bit.
    const __m256i high =
        _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(qh), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)),
                         _mm256_set1_epi32(1));
    const __m256i idx =
        _mm256_or_si256(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs))),
                        _mm256_slli_epi32(high, 8));
    mag = _mm256_i32gather_epi32(reinterpret_cast<const int*>(kIq3sGrid), idx, 4);
    signs = sign_bytes(sign_bits);
    const int s = (row.blk[offsetof(BlockIQ3_S, scales) + k / 2] >> (4 * (k % 2))) & 0xF;
    sc = _mm256_set1_epi16(static_cast<short>(2 * s + 1));
  }
};

}  // namespace
}  // namespace strata::cpu
