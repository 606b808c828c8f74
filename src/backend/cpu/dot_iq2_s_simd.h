// IQ2_S: f = d / 8, sc = 2 s + 1 per 16 elements, w = grid * sign (explicit sign bytes).
// The block-format Ops of iq_tile_avx2.h, shared by dot_iq2_s_avx2.cpp and dot_iq2_s_avx512.cpp.
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
  static constexpr size_t kBlockBytes = sizeof(BlockIQ2_S);
  static constexpr int kMaxAbsW = 43;  // the largest |w| of a chunk: grid bytes in {8, 25, 43}
  struct Row {
    const uint8_t* blk;
    float f;
    alignas(16) uint16_t idx[32];  // [group] kIq2sGrid index: qs | 2 bits of qh << 8
  };
  static Row load_row(const uint8_t* blk) {
    Row row;
    row.blk = blk;
    row.f = load_half(blk + offsetof(BlockIQ2_S, d)) * 0.125f;
    // qh[k]: bits 2g, 2g + 1 the high index bits of chunk k's group g.
    const __m128i q =
        _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + offsetof(BlockIQ2_S, qh))));
    const __m128i m = _mm_set1_epi16(0x300);
    grid_indexes4(blk + offsetof(BlockIQ2_S, qs),
                  {_mm_and_si128(_mm_slli_epi16(q, 8), m), _mm_and_si128(_mm_slli_epi16(q, 6), m),
                   _mm_and_si128(_mm_slli_epi16(q, 4), m), _mm_and_si128(_mm_slli_epi16(q, 2), m)},
                  row.idx);
    return row;
  }
  static void chunk_parts(const Row& row, int k, __m256i& mag, IqSigns& signs, __m256i& sc) {
    const uint16_t* idx = row.idx + 4 * k;
    uint32_t sign_bits;
    std::memcpy(&sign_bits, row.blk + offsetof(BlockIQ2_S, qs) + kQK_K / 8 + 4 * k, 4);
    mag = grid4(kIq2sGrid[idx[0]], kIq2sGrid[idx[1]], kIq2sGrid[idx[2]], kIq2sGrid[idx[3]]);
    signs = sign_bytes(sign_bits);
    sc = pair_scales<4>(row.blk[offsetof(BlockIQ2_S, scales) + k]);
  }
};

}  // namespace
}  // namespace strata::cpu
