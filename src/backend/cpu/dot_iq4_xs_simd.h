// IQ4_XS: f = d, sc = ls - 32 per chunk, w = kIq4nlValues[q] by a table lookup of the nibbles.
// The block-format Ops of iq_tile_avx2.h, shared by dot_iq4_xs_avx2.cpp and dot_iq4_xs_avx512.cpp.
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
  static constexpr size_t kBlockBytes = sizeof(BlockIQ4_XS);
  struct Row {
    const uint8_t* qs;  // [128] nibbles, 16 bytes per chunk in Q4_0's order
    int16_t scales[8];  // ls - 32
    float f;
  };
  static Row load_row(const uint8_t* blk) {
    Row row;
    uint16_t scales_h;
    std::memcpy(&scales_h, blk + offsetof(BlockIQ4_XS, scales_h), 2);
    for (int ib = 0; ib < 8; ++ib)
      row.scales[ib] =
          static_cast<int16_t>(iq4_xs_scale(scales_h, blk + offsetof(BlockIQ4_XS, scales_l), ib));
    row.qs = blk + offsetof(BlockIQ4_XS, qs);
    row.f = load_half(blk + offsetof(BlockIQ4_XS, d));
    return row;
  }
  static void chunk(const Row& row, int k, __m256i& w, __m256i& sc) {
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)));
    w = _mm256_shuffle_epi8(table, nibbles_to_bytes(row.qs + 16 * k));
    sc = _mm256_set1_epi16(row.scales[k]);
  }
};

}  // namespace
}  // namespace strata::cpu
