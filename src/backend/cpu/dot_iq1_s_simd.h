// IQ1_S: f = d / 8, sc = 2 s + 1 per chunk, w = 8 grid +- 1.
// The block-format Ops of iq_tile_avx2.h, shared by dot_iq1_s_avx2.cpp and dot_iq1_s_avx512.cpp.
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
  static constexpr size_t kBlockBytes = sizeof(BlockIQ1_S);
  static constexpr int kMaxAbsW = 9;  // the largest |w| of a chunk: 8 grid +- 1, grid in {-1, 0, 1}
  struct Row {
    const uint8_t* blk;
    float f;
    alignas(16) uint16_t idx[32];  // [group] kIq1Grid8Delta index: qs | 3 bits of qh << 8 | delta << 11
  };
  static Row load_row(const uint8_t* blk) {
    Row row;
    row.blk = blk;
    row.f = load_half(blk + offsetof(BlockIQ1_S, d)) * 0.125f;
    // qh of chunk k: bits 3g..3g+2 the high index bits of group g, 12..14 the scale, 15 the delta.
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(BlockIQ1_S, qh)));
    const __m128i m = _mm_set1_epi16(0x700), d = _mm_and_si128(_mm_srli_epi16(q, 4), _mm_set1_epi16(0x800));
    const __m128i n0 =
        _mm_or_si128(_mm_and_si128(_mm_slli_epi16(q, 8), m), d);  // [chunk] group 0's bits 8..11
    const __m128i n1 = _mm_or_si128(_mm_and_si128(_mm_slli_epi16(q, 5), m), d);
    const __m128i n2 = _mm_or_si128(_mm_and_si128(_mm_slli_epi16(q, 2), m), d);
    const __m128i n3 = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(q, 1), m), d);
    grid_indexes4(blk + offsetof(BlockIQ1_S, qs), {n0, n1, n2, n3}, row.idx);
    return row;
  }
  static void chunk(const Row& row, int k, __m256i& w, __m256i& sc) {
    w = iq1_grid4(row.idx + 4 * k);
    uint16_t qh;
    std::memcpy(&qh, row.blk + offsetof(BlockIQ1_S, qh) + 2 * k, 2);
    sc = _mm256_set1_epi16(static_cast<short>(2 * ((qh >> 12) & 7) + 1));
  }
};

}  // namespace
}  // namespace strata::cpu
