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
  };
  static Row load_row(const uint8_t* blk) { return {blk, load_half(blk + offsetof(BlockIQ2_S, d)) * 0.125f}; }
  static void chunk_parts(const Row& row, int k, __m256i& mag, IqSigns& signs, __m256i& sc) {
    const uint8_t* qs = row.blk + offsetof(BlockIQ2_S, qs) + 4 * k;
    const int qh = row.blk[offsetof(BlockIQ2_S, qh) + k];
    uint32_t sign_bits;
    std::memcpy(&sign_bits, row.blk + offsetof(BlockIQ2_S, qs) + kQK_K / 8 + 4 * k, 4);
    mag = grid4(kIq2sGrid[qs[0] | ((qh << 8) & 0x300)], kIq2sGrid[qs[1] | ((qh << 6) & 0x300)],
                kIq2sGrid[qs[2] | ((qh << 4) & 0x300)], kIq2sGrid[qs[3] | ((qh << 2) & 0x300)]);
    signs = sign_bytes(sign_bits);
    const int s = row.blk[offsetof(BlockIQ2_S, scales) + k];
    sc = pair_scales(2 * (s & 0xF) + 1, 2 * (s >> 4) + 1);
  }
};

}  // namespace
}  // namespace strata::cpu
