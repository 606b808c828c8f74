// TQ1_0: f = d, sc = 1, w = trit - 1; trits from 16-bit multiplies (byte * 3^n mod 256, * 3 >> 8).
// The block-format Ops of iq_tile_avx2.h, shared by dot_tq1_0_avx2.cpp and dot_tq1_0_avx512.cpp.
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

// Trit of each of the 32 bytes at the powers of 3 given per 16-bit lane (both bytes of a lane use
// the lane's power): floor(3 * (byte * pow mod 256) / 256), 0..2. The low byte's product is exact
// in a lane's low byte, the high byte's once the low one is masked off; each moved to the top of
// the lane, vpmulhuw by 3 leaves 3 p / 256 below it.
static inline __m256i trits_at(__m256i bytes, __m256i pow) {
  const __m256i lo = _mm256_slli_epi16(_mm256_mullo_epi16(bytes, pow), 8);
  const __m256i hi =
      _mm256_mullo_epi16(_mm256_and_si256(bytes, _mm256_set1_epi16(static_cast<short>(0xFF00))), pow);
  const __m256i three = _mm256_set1_epi16(3);
  return _mm256_or_si256(_mm256_mulhi_epu16(lo, three), _mm256_slli_epi16(_mm256_mulhi_epu16(hi, three), 8));
}

struct Ops {
  static constexpr size_t kBlockBytes = sizeof(BlockTQ1_0);
  static constexpr bool kUnitScales = true;  // sc = 1 (iq_panel_avx2.h)
  static constexpr int kMaxAbsW = 1;         // the largest |w| of a chunk: trits - 1
  struct Row {
    const uint8_t* blk;
    float f;
  };
  static Row load_row(const uint8_t* blk) { return {blk, load_half(blk + offsetof(BlockTQ1_0, d))}; }
  // Chunk k's unsigned trits q = w + 1. Chunks 0..4: qs[0..31] at trit k. Chunks 5, 6: qs[32..47]
  // at trits 0, 1 and 2, 3. Chunk 7: qs[32..47] at trit 4, then qh[0..3] at trits 0..3 (element
  // 240 + 4 n + j).
  static __m256i trits(const Row& row, int k) {
    static constexpr short kPow3[5] = {1, 3, 9, 27, 81};
    const uint8_t* qs = row.blk + offsetof(BlockTQ1_0, qs);
    if (k < 5) return trits_at(loadu_256(qs), _mm256_set1_epi16(kPow3[k]));
    const __m128i q16 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + 32));
    if (k < 7) {
      const int n = 2 * (k - 5);
      return trits_at(_mm256_setr_m128i(q16, q16),
                      _mm256_setr_m128i(_mm_set1_epi16(kPow3[n]), _mm_set1_epi16(kPow3[n + 1])));
    }
    uint32_t qh;
    std::memcpy(&qh, row.blk + offsetof(BlockTQ1_0, qh), 4);
    const __m128i h = _mm_set1_epi32(static_cast<int>(qh));
    const __m128i pow_h = _mm_setr_epi16(1, 1, 3, 3, 9, 9, 27, 27);
    return trits_at(_mm256_setr_m128i(q16, h), _mm256_setr_m128i(_mm_set1_epi16(81), pow_h));
  }
  static void chunk(const Row& row, int k, __m256i& w, __m256i& sc) {
    w = _mm256_sub_epi8(trits(row, k), _mm256_set1_epi8(1));
    sc = _mm256_set1_epi16(1);
  }
};

}  // namespace
}  // namespace strata::cpu
