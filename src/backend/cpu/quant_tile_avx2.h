// The AVX2 register tile of the legacy quantized types, generic over a block-format Ops class
// (defined in each dot_<type>_avx2.cpp). Internal linkage: included only by AVX2 files.
//
// Per 32-element block, each weight row is unpacked once into 32 bytes and each activation row
// loaded once; every (row, token) pair then costs one maddubs + madd (int8 products summed in
// int32 lanes) and one FMA with the block's scale product. Signed weights use the sign trick
// (|w| * sign(a, w)) since maddubs takes one unsigned operand.
//
// Ops provides:
//   kWeightBytes, kActBytes        block sizes of the weight and activation formats
//   kActD, kActQs, kActS           field offsets in the activation block (kActS if kHasMin)
//   kSigned                        weights() returns int8 (else unsigned, <= 31)
//   kHasMin                        the block adds m_w * s_a
//   weights(blk), d(blk), m(blk)   32 quants in element order, scale, min
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/block_access.h"
#include "backend/cpu/simd_avx2.h"

namespace strata::cpu {
namespace {

template <class Ops>
struct QuantTileAvx2 {
  // out[c * os + r] = dot(w row r, a row c) for NR x NC; w, a: [n / 32] blocks per row.
  template <int NR, int NC>
  static void run(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, float* out,
                  size_t os) {
    __m256 acc[NR][NC];
    float macc[NR][NC];
    for (int r = 0; r < NR; ++r)
      for (int c = 0; c < NC; ++c) acc[r][c] = _mm256_setzero_ps(), macc[r][c] = 0.0f;
    const int64_t nb = n / 32;
    for (int64_t b = 0; b < nb; ++b) {
      __m256i wq[NR], wabs[NR];
      float dw[NR], mw[NR];
      for (int r = 0; r < NR; ++r) {
        const uint8_t* blk = w + r * ws + b * Ops::kWeightBytes;
        wq[r] = Ops::weights(blk);
        wabs[r] = Ops::kSigned ? _mm256_sign_epi8(wq[r], wq[r]) : wq[r];
        dw[r] = Ops::d(blk);
        if constexpr (Ops::kHasMin) mw[r] = Ops::m(blk);
      }
      for (int c = 0; c < NC; ++c) {
        const uint8_t* blk = a + c * as + b * Ops::kActBytes;
        const __m256i y = loadu_256(blk + Ops::kActQs);
        const float da = load_half(blk + Ops::kActD);
        for (int r = 0; r < NR; ++r) {
          const __m256i ys = Ops::kSigned ? _mm256_sign_epi8(y, wq[r]) : y;
          const __m256 p = _mm256_cvtepi32_ps(dot_u8s8_i32(wabs[r], ys));
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
