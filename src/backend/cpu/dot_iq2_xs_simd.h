// IQ2_XS: f = d / 8, sc = 2 s + 1 per 16 elements, w = grid * sign.
// The block-format Ops of iq_tile_avx2.h, shared by dot_iq2_xs_avx2.cpp and dot_iq2_xs_avx512.cpp.
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
  static constexpr size_t kBlockBytes = sizeof(BlockIQ2_XS);
  static constexpr int kMaxAbsW = 43;  // the largest |w| of a chunk: grid bytes in {8, 25, 43}
  struct Row {
    const uint8_t* qs;      // [64]: u16 per group of 8
    const uint8_t* scales;  // [8]
    float f;
  };
  static Row load_row(const uint8_t* blk) {
    return {blk + offsetof(BlockIQ2_XS, qs), blk + offsetof(BlockIQ2_XS, scales),
            load_half(blk + offsetof(BlockIQ2_XS, d)) * 0.125f};
  }
  static void chunk_parts(const Row& row, int k, __m256i& mag, IqSigns& signs, __m256i& sc) {
    uint64_t q;  // four 16-bit entries: grid index in bits 0..8, signs in 9..15
    std::memcpy(&q, row.qs + 8 * k, 8);
    mag = grid4(kIq2xsGrid[q & 511], kIq2xsGrid[(q >> 16) & 511], kIq2xsGrid[(q >> 32) & 511],
                kIq2xsGrid[(q >> 48) & 511]);
    signs = signs7_high9(q);
    sc = pair_scales<4>(row.scales[k]);
  }
};

}  // namespace
}  // namespace strata::cpu
