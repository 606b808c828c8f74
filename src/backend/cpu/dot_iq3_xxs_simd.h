// IQ3_XXS: f = d / 4, sc = 2 s + 1 per chunk, w = grid * sign (8 grid entries of 4 gathered).
// The block-format Ops of iq_tile_avx2.h, shared by dot_iq3_xxs_avx2.cpp and dot_iq3_xxs_avx512.cpp.
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
  static constexpr size_t kBlockBytes = sizeof(BlockIQ3_XXS);
  static constexpr int kMaxAbsW = 62;  // the largest |w| of a chunk: grid bytes in {4, 12, ..., 52, 62}
  struct Row {
    const uint8_t* qs;  // [96]: 64 grid indices, then a u32 of signs and scale per chunk
    float f;
  };
  static Row load_row(const uint8_t* blk) {
    return {blk + offsetof(BlockIQ3_XXS, qs), load_half(blk + offsetof(BlockIQ3_XXS, d)) * 0.25f};
  }
  static void chunk_parts(const Row& row, int k, __m256i& mag, IqSigns& signs, __m256i& sc) {
    uint32_t aux;
    std::memcpy(&aux, row.qs + kQK_K / 4 + 4 * k, 4);
    // Eight scalar loads: faster than vpgatherdd on Zen 5 (decode at avx2 21.1-21.5 -> 26.3-26.7
    // t/s, at avx512 21.2-22.2 -> 26.5-29.5 with the sign masks), and much faster on Zen 1/2,
    // whose gathers are microcoded.
    const uint8_t* q = row.qs + 8 * k;
    mag = _mm256_setr_epi32(static_cast<int>(kIq3xxsGrid[q[0]]), static_cast<int>(kIq3xxsGrid[q[1]]),
                            static_cast<int>(kIq3xxsGrid[q[2]]), static_cast<int>(kIq3xxsGrid[q[3]]),
                            static_cast<int>(kIq3xxsGrid[q[4]]), static_cast<int>(kIq3xxsGrid[q[5]]),
                            static_cast<int>(kIq3xxsGrid[q[6]]), static_cast<int>(kIq3xxsGrid[q[7]]));
    signs = signs7_packed(aux);
    sc = _mm256_set1_epi16(static_cast<short>(2 * (aux >> 28) + 1));
  }
};

}  // namespace
}  // namespace strata::cpu
