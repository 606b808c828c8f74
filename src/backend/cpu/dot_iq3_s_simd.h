// IQ3_S: f = d, sc = 2 s + 1 per chunk, w = grid * sign (8 grid entries of 4 per chunk, 9-bit indices).
// The block-format Ops of iq_tile_avx2.h, shared by dot_iq3_s_avx2.cpp and dot_iq3_s_avx512.cpp.
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
  static constexpr size_t kBlockBytes = sizeof(BlockIQ3_S);
  static constexpr int kMaxAbsW = 15;  // the largest |w| of a chunk: grid bytes in {1, 3, ..., 15}
  struct Row {
    const uint8_t* blk;
    float f;
    alignas(32) uint16_t idx[64];  // [group of 4] kIq3sGrid index: qs | bit g of qh[k] << 8
  };
  static Row load_row(const uint8_t* blk) {
    Row row;
    row.blk = blk;
    row.f = load_half(blk + offsetof(BlockIQ3_S, d));
    // Two chunks per step: qh[k] to the 16-bit lanes of the low half, qh[k + 1] to the high one,
    // bit g of lane g to bit 8.
    const __m256i qh = _mm256_broadcastq_epi64(
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + offsetof(BlockIQ3_S, qh))));
    const __m256i bit = _mm256_setr_epi16(1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128);
    const __m256i b8 = _mm256_set1_epi16(0x100);
#pragma GCC unroll 4
    for (int k = 0; k < 8; k += 2) {
      const __m256i pick = _mm256_setr_epi8(k, -1, k, -1, k, -1, k, -1, k, -1, k, -1, k, -1, k, -1,  //
                                            k + 1, -1, k + 1, -1, k + 1, -1, k + 1, -1, k + 1, -1, k + 1, -1,
                                            k + 1, -1, k + 1, -1);
      const __m256i h =
          _mm256_and_si256(_mm256_cmpeq_epi16(_mm256_and_si256(_mm256_shuffle_epi8(qh, pick), bit), bit), b8);
      const __m256i q = _mm256_cvtepu8_epi16(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(BlockIQ3_S, qs) + 8 * k)));
      _mm256_store_si256(reinterpret_cast<__m256i*>(row.idx + 8 * k), _mm256_or_si256(q, h));
    }
    return row;
  }
  static void chunk_parts(const Row& row, int k, __m256i& mag, IqSigns& signs, __m256i& sc) {
    uint32_t sign_bits;
    std::memcpy(&sign_bits, row.blk + offsetof(BlockIQ3_S, signs) + 4 * k, 4);
    // Eight scalar loads, as IQ3_XXS, no vpgatherdd (microcoded on Zen 1/2). With the indexes from
    // load_row, decode on Zen 5 went 21.5 -> 24.2 t/s (avx512), 21.7 -> 25.0 (avx2); the loads
    // alone against the gather were not timed apart (BENCHMARKS, 2026-12-05 evening).
    const uint16_t* i = row.idx + 8 * k;
    mag = _mm256_setr_epi32(static_cast<int>(kIq3sGrid[i[0]]), static_cast<int>(kIq3sGrid[i[1]]),
                            static_cast<int>(kIq3sGrid[i[2]]), static_cast<int>(kIq3sGrid[i[3]]),
                            static_cast<int>(kIq3sGrid[i[4]]), static_cast<int>(kIq3sGrid[i[5]]),
                            static_cast<int>(kIq3sGrid[i[6]]), static_cast<int>(kIq3sGrid[i[7]]));
    signs = sign_bytes(sign_bits);
    const int s = (row.blk[offsetof(BlockIQ3_S, scales) + k / 2] >> (4 * (k % 2))) & 0xF;
    sc = _mm256_set1_epi16(static_cast<short>(2 * s + 1));
  }
};

}  // namespace
}  // namespace strata::cpu
