// TQ2_0: f = d, sc = 1, w = q - 1 from 2-bit fields (chunk k: bits 2 (k % 4) of qs[32 (k / 4)..]).
// The block-format Ops of iq_tile_avx2.h, shared by dot_tq2_0_avx2.cpp and dot_tq2_0_avx512.cpp.
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
  static constexpr size_t kBlockBytes = sizeof(BlockTQ2_0);
  static constexpr bool kUnitScales = true;  // sc = 1 (iq_panel_avx2.h)
  static constexpr int kMaxAbsW = 1;         // the largest |w| of a chunk: 2-bit fields - 1
  struct Row {
    const uint8_t* qs;  // [64]
    float f;
  };
  static Row load_row(const uint8_t* blk) {
    return {blk + offsetof(BlockTQ2_0, qs), load_half(blk + offsetof(BlockTQ2_0, d))};
  }
  // Chunk k's 2-bit fields q = w + 1.
  static __m256i trits(const Row& row, int k) {
    const __m256i x = loadu_256(row.qs + 32 * (k / 4));
    return _mm256_and_si256(_mm256_srli_epi16(x, 2 * (k % 4)), _mm256_set1_epi8(3));
  }
  static void chunk(const Row& row, int k, __m256i& w, __m256i& sc) {
    w = _mm256_sub_epi8(trits(row, k), _mm256_set1_epi8(1));
    sc = _mm256_set1_epi16(1);
  }
};

}  // namespace
}  // namespace strata::cpu
