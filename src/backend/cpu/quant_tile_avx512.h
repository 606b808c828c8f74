// The AVX-512 (VNNI, 256-bit) register tile of the legacy quantized types in the row layout,
// generic over a block-format Ops class (defined in each dot_<type>_avx512.cpp). Internal
// linkage: included only by AVX-512 files. (Matmul prefers the interleaved layout at this level,
// see packed_kernels.h; these serve row views and direct vec_dot callers.)
//
// Weights are unpacked to unsigned bytes u with a zero point z (value = d * (u - z), or
// d * u + m): vpdpbusd sums u * a exactly in int32 lanes, and starting each accumulator at
// -z * sum(a) — computed once per activation block with one more vpdpbusd — removes the zero
// point for every row of the tile.
//
// Ops provides:
//   kWeightBytes, kActBytes, kActD, kActQs, kActS, kHasMin   as quant_tile_avx2.h
//   kZeroPoint                                                z (0 for the types with a min)
//   weights_u8(blk), d(blk), m(blk)                           32 unsigned quants in element order
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/block_access.h"
#include "backend/cpu/simd_avx2.h"

namespace strata::cpu {
namespace {

template <class Ops>
struct QuantTileAvx512 {
  template <int NR, int NC>
  static void run(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, float* out,
                  size_t os) {
    __m256 acc[NR][NC];
    float macc[NR][NC];
    for (int r = 0; r < NR; ++r)
      for (int c = 0; c < NC; ++c) acc[r][c] = _mm256_setzero_ps(), macc[r][c] = 0.0f;
    const __m256i zero_point = _mm256_set1_epi8(static_cast<char>(Ops::kZeroPoint));
    const int64_t nb = n / 32;
    for (int64_t b = 0; b < nb; ++b) {
      __m256i wu[NR];
      float dw[NR], mw[NR];
      for (int r = 0; r < NR; ++r) {
        const uint8_t* blk = w + r * ws + b * Ops::kWeightBytes;
        wu[r] = Ops::weights_u8(blk);
        dw[r] = Ops::d(blk);
        if constexpr (Ops::kHasMin) mw[r] = Ops::m(blk);
      }
      for (int c = 0; c < NC; ++c) {
        const uint8_t* blk = a + c * as + b * Ops::kActBytes;
        const __m256i y = loadu_256(blk + Ops::kActQs);
        const float da = load_half(blk + Ops::kActD);
        __m256i start = _mm256_setzero_si256();
        if constexpr (Ops::kZeroPoint != 0)
          start = _mm256_sub_epi32(start, _mm256_dpbusd_epi32(_mm256_setzero_si256(), zero_point, y));
        for (int r = 0; r < NR; ++r) {
          const __m256 p = _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(start, wu[r], y));
          acc[r][c] = _mm256_fmadd_ps(p, _mm256_set1_ps(dw[r] * da), acc[r][c]);
        }
        if constexpr (Ops::kHasMin) {
          const float sa = load_half(blk + Ops::kActS);
          for (int r = 0; r < NR; ++r) macc[r][c] += mw[r] * sa;
        }
      }
    }
    for (int r = 0; r < NR; ++r)
      for (int c = 0; c < NC; ++c) out[c * os + r] = hsum_f32x8(acc[r][c]) + macc[r][c];
  }
};

}  // namespace
}  // namespace strata::cpu
