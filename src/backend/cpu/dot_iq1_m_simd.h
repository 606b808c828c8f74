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

// A chunk's pair scales for its two 3-bit sub-scales f = hi << 3 | lo (lanes 0..7: 2 lo + 1,
// 8..15: 2 hi + 1), and its delta bytes for the 4 groups' delta signs (bit i: group i's -1): two
// loads instead of the bit extraction, 64-bit selects and inserts per chunk, which held IQ1_M
// decode at 0.58x llama.cpp's.
struct Iq1mTables {
  alignas(32) int16_t scales[64][16];
  alignas(32) int8_t deltas[16][32];
  constexpr Iq1mTables() : scales(), deltas() {
    for (int f = 0; f < 64; ++f)
      for (int i = 0; i < 16; ++i) scales[f][i] = static_cast<int16_t>(2 * (i < 8 ? f & 7 : f >> 3) + 1);
    for (int b = 0; b < 16; ++b)
      for (int e = 0; e < 32; ++e) deltas[b][e] = static_cast<int8_t>((b >> (e / 8)) & 1 ? -1 : 1);
  }
};
inline constexpr Iq1mTables kIq1mTables{};

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
  static void chunk(const Row& row, int k, __m256i& w, __m256i& sc) {
    const uint8_t* qs = row.blk + offsetof(BlockIQ1_M, qs) + 4 * k;
    const int h0 = row.blk[offsetof(BlockIQ1_M, qh) + 2 * k],
              h1 = row.blk[offsetof(BlockIQ1_M, qh) + 2 * k + 1];
#if defined(__AVX512F__)
    uint32_t qs32;
    std::memcpy(&qs32, qs, 4);
    // Each group's nibble: 3 index bits (to bits 8..10 of its lane) and the delta sign.
    const __m256i g8 =
        iq1_grid4(qs32, _pdep_u64(static_cast<uint32_t>(h0 | h1 << 8) & 0x7777, 0x0F000F000F000F00ull));
#else
    const __m256i g8 = _mm256_setr_epi64x(static_cast<long long>(kIq1sGrid8[qs[0] | ((h0 & 7) << 8)]),  // 8 g
                                          static_cast<long long>(kIq1sGrid8[qs[1] | (((h0 >> 4) & 7) << 8)]),
                                          static_cast<long long>(kIq1sGrid8[qs[2] | ((h1 & 7) << 8)]),
                                          static_cast<long long>(kIq1sGrid8[qs[3] | (((h1 >> 4) & 7) << 8)]));
#endif
    const int delta_bits = ((h0 >> 3) & 1) | ((h0 >> 6) & 2) | ((h1 >> 1) & 4) | ((h1 >> 4) & 8);
    const __m256i delta = _mm256_load_si256(reinterpret_cast<const __m256i*>(kIq1mTables.deltas[delta_bits]));
    w = _mm256_add_epi8(g8, delta);
    uint16_t s16;  // sub-scales 2k and 2k + 1: bits 6 (k % 2) .. + 5 of the k / 2-th 16-bit word
    std::memcpy(&s16, row.blk + offsetof(BlockIQ1_M, scales) + 2 * (k / 2), 2);
    sc = _mm256_load_si256(reinterpret_cast<const __m256i*>(kIq1mTables.scales[(s16 >> (6 * (k % 2))) & 63]));
  }
};

}  // namespace
}  // namespace strata::cpu
