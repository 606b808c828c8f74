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
  };
  static Row load_row(const uint8_t* blk) { return {blk, load_half(blk + offsetof(BlockIQ1_S, d)) * 0.125f}; }
  static void chunk(const Row& row, int k, __m256i& w, __m256i& sc) {
    const uint8_t* qs = row.blk + offsetof(BlockIQ1_S, qs) + 4 * k;
    uint16_t qh;
    std::memcpy(&qh, row.blk + offsetof(BlockIQ1_S, qh) + 2 * k, 2);
#if defined(__AVX512F__)
    uint32_t qs32;
    std::memcpy(&qs32, qs, 4);
    const __m256i g8 = iq1_grid4(qs32, _pdep_u64(qh & 0xFFF, 0x0700070007000700ull));  // bits 3i.. -> lane i
#else
    const __m256i g8 = _mm256_setr_epi64x(static_cast<long long>(kIq1sGrid8[qs[0] | ((qh & 7) << 8)]),
                                          static_cast<long long>(kIq1sGrid8[qs[1] | (((qh >> 3) & 7) << 8)]),
                                          static_cast<long long>(kIq1sGrid8[qs[2] | (((qh >> 6) & 7) << 8)]),
                                          static_cast<long long>(kIq1sGrid8[qs[3] | (((qh >> 9) & 7) << 8)]));
#endif
    // 8 g per byte (kIq1sGrid8), then +-1.
    w = _mm256_add_epi8(g8, _mm256_set1_epi8(qh & 0x8000 ? -1 : 1));
    sc = _mm256_set1_epi16(static_cast<short>(2 * ((qh >> 12) & 7) + 1));
  }
};

}  // namespace
}  // namespace strata::cpu
