// IQ1_M: f = d / 8, sc = 2 s + 1 per 16 elements, w = 8 grid +- 1 (delta sign per 8).
// The block-format Ops of iq_tile_avx2.h, shared by dot_iq1_m_avx2.cpp and dot_iq1_m_avx512.cpp.
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
  static constexpr size_t kBlockBytes = sizeof(BlockIQ1_M);
  static constexpr int kMaxAbsW = 9;  // the largest |w| of a chunk: 8 grid +- 1, grid in {-1, 0, 1}
  struct Row {
    const uint8_t* blk;
    float f;
    alignas(16) uint16_t idx[32];  // [group] kIq1Grid8Delta index: qs | the group's qh nibble << 8
  };
  static Row load_row(const uint8_t* blk) {
    Row row;
    row.blk = blk;
    row.f = fp16_to_f32(iq1_m_scale(blk + offsetof(BlockIQ1_M, scales))) * 0.125f;
    // Group 2i's nibble is the low one of qh[i], 2i + 1's the high one: 3 index bits and the delta sign.
    const __m128i qh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(BlockIQ1_M, qh)));
    const __m128i m = _mm_set1_epi8(0x0F);
    const __m128i lo = _mm_and_si128(qh, m), hi = _mm_and_si128(_mm_srli_epi16(qh, 4), m);
    const __m128i n[2] = {_mm_unpacklo_epi8(lo, hi), _mm_unpackhi_epi8(lo, hi)};  // groups 0..15, 16..31
    for (int j = 0; j < 2; ++j) {
      const __m128i qs =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(BlockIQ1_M, qs) + 16 * j));
      _mm_store_si128(reinterpret_cast<__m128i*>(row.idx + 16 * j), _mm_unpacklo_epi8(qs, n[j]));
      _mm_store_si128(reinterpret_cast<__m128i*>(row.idx + 16 * j + 8), _mm_unpackhi_epi8(qs, n[j]));
    }
    return row;
  }
  static void chunk(const Row& row, int k, __m256i& w, __m256i& sc) {
    w = iq1_grid4(row.idx + 4 * k);
    uint16_t s16;  // sub-scales 2k and 2k + 1: bits 6 (k % 2) .. + 5 of the k / 2-th 16-bit word
    std::memcpy(&s16, row.blk + offsetof(BlockIQ1_M, scales) + 2 * (k / 2), 2);
    sc = pair_scales<3>((s16 >> (6 * (k % 2))) & 63);
  }
};

}  // namespace
}  // namespace strata::cpu
