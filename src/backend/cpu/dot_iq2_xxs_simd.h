// IQ2_XXS: f = d / 8, sc = 2 s + 1 per chunk, w = grid * sign.
// The block-format Ops of iq_tile_avx2.h, shared by dot_iq2_xxs_avx2.cpp and dot_iq2_xxs_avx512.cpp.
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
  static constexpr size_t kBlockBytes = sizeof(BlockIQ2_XXS);
  static constexpr int kMaxAbsW = 43;  // the largest |w| of a chunk: grid bytes in {8, 25, 43}
  struct Row {
    const uint8_t* qs;  // [64]: per chunk 4 grid indices and a u32 of signs and scale
    float f;
  };
  static Row load_row(const uint8_t* blk) {
    return {blk + offsetof(BlockIQ2_XXS, qs), load_half(blk + offsetof(BlockIQ2_XXS, d)) * 0.125f};
  }
  static void chunk_parts(const Row& row, int k, __m256i& mag, IqSigns& signs, __m256i& sc) {
    const uint8_t* q = row.qs + 8 * k;
    uint32_t aux;
    std::memcpy(&aux, q + 4, 4);
    mag = grid4(kIq2xxsGrid[q[0]], kIq2xxsGrid[q[1]], kIq2xxsGrid[q[2]], kIq2xxsGrid[q[3]]);
    signs = signs7_packed(aux);
    sc = _mm256_set1_epi16(static_cast<short>(2 * (aux >> 28) + 1));
  }
};

}  // namespace
}  // namespace strata::cpu
