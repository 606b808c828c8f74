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
  };
  static Row load_row(const uint8_t* blk) {
    return {blk, fp16_to_f32(iq1_m_scale(blk + offsetof(BlockIQ1_M, scales))) * 0.125f};
  }
  static uint64_t delta_bytes(int nibble) { return nibble & 8 ? ~uint64_t{0} : 0x0101010101010101ull; }
  static void chunk(const Row& row, int k, __m256i& w, __m256i& sc) {
    const uint8_t* qs = row.blk + offsetof(BlockIQ1_M, qs) + 4 * k;
    const int h0 = row.blk[offsetof(BlockIQ1_M, qh) + 2 * k],
              h1 = row.blk[offsetof(BlockIQ1_M, qh) + 2 * k + 1];
    const __m256i g = _mm256_setr_epi64x(static_cast<long long>(kIq1sGrid[qs[0] | ((h0 & 7) << 8)]),
                                         static_cast<long long>(kIq1sGrid[qs[1] | (((h0 >> 4) & 7) << 8)]),
                                         static_cast<long long>(kIq1sGrid[qs[2] | ((h1 & 7) << 8)]),
                                         static_cast<long long>(kIq1sGrid[qs[3] | (((h1 >> 4) & 7) << 8)]));
    const __m256i delta = _mm256_setr_epi64x(
        static_cast<long long>(delta_bytes(h0)), static_cast<long long>(delta_bytes(h0 >> 4)),
        static_cast<long long>(delta_bytes(h1)), static_cast<long long>(delta_bytes(h1 >> 4)));
    const __m256i g8 = _mm256_and_si256(_mm256_slli_epi16(g, 3), _mm256_set1_epi8(static_cast<char>(0xF8)));
    w = _mm256_add_epi8(g8, delta);
    const uint8_t* scales = row.blk + offsetof(BlockIQ1_M, scales);
    sc = pair_scales(2 * iq1_m_sub_scale(scales, 2 * k) + 1, 2 * iq1_m_sub_scale(scales, 2 * k + 1) + 1);
  }
};

}  // namespace
}  // namespace strata::cpu
