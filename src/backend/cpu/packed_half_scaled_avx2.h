// The quants of the half-scaled super-block kinds (Q6_K, Q3_K, Q2_K; packed_kernels.h) on 256-bit
// registers, for the AVX2 and AVX-VNNI kernels. Static inline (see DEVELOPERS.md): each including
// file gets its own copy compiled for its ISA.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <vector>

#include "backend/cpu/packed_kernels.h"
#include "backend/cpu/packed_kind.h"

namespace strata::cpu::packed {

// Chunk C of element half HH (0: elements 4C..4C+3, 1: 16 + 4C..) of the 8 rows of row half h as
// unsigned quants: Q6_K's u = low | high << 4 (0..63, the high bits are bits 2C..2C+1 of plane
// HH); Q3_K's u = low2 | third << 2 (0..7: bits 2C..2C+1 of lo plane HH, bit 4 HH + C of hi);
// Q2_K's u = low2 (0..3). qs: the sub-block's quants.
template <Kind K, int C, int HH>
static inline __m256i half_quants(const uint8_t* qs, int h) {
  if constexpr (K == Kind::Q6_K) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i p = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 64 * C + 32 * h));
    const __m256i low = HH == 0 ? _mm256_and_si256(p, m4) : _mm256_and_si256(_mm256_srli_epi16(p, 4), m4);
    const __m256i plane =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + kQ6kQhOffset + 64 * HH + 32 * h));
    __m256i high;  // bits 2C..2C+1 moved to bits 4..5
    if constexpr (C <= 2)
      high = _mm256_slli_epi16(plane, 4 - 2 * C);
    else
      high = _mm256_srli_epi16(plane, 2);
    return _mm256_or_si256(low, _mm256_and_si256(high, _mm256_set1_epi8(0x30)));
  } else {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 64 * HH + 32 * h));
    const __m256i u = _mm256_and_si256(_mm256_srli_epi16(lo, 2 * C), _mm256_set1_epi8(3));
    if constexpr (K == Kind::Q2_K) return u;
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + kQ3kHiOffset + 32 * h));
    constexpr int kShift = 4 * HH + C - 2;  // bit 4 HH + C moved to bit 2
    __m256i third;
    if constexpr (kShift >= 0)
      third = _mm256_srli_epi16(hi, kShift);
    else
      third = _mm256_slli_epi16(hi, -kShift);
    return _mm256_or_si256(u, _mm256_and_si256(third, _mm256_set1_epi8(4)));
  }
}

// The float factors of half HH of sub-block j for the 8 rows of row half h: d * sc (Q6_K, Q3_K:
// signed sc; Q2_K: its 4-bit scale) and Q2_K's -dmin * min.
template <Kind K, int HH>
static inline void half_factors(const uint8_t* w, int j, int h, __m256& dw, __m256& mw) {
  const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 16 * h)));
  const __m128i sc8 =
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + kHalfScOffset<K> + 16 * (2 * j + HH) + 8 * h));
  if constexpr (K == Kind::Q2_K) {
    const __m256i sc = _mm256_cvtepu8_epi32(sc8);
    const __m256 dmin =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + kQ2kDminOffset + 16 * h)));
    dw = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_and_si256(sc, _mm256_set1_epi32(0x0f))));
    mw =
        _mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), dmin), _mm256_cvtepi32_ps(_mm256_srli_epi32(sc, 4)));
  } else {
    dw = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc8)));
  }
}

// A group's half-scaled quants decoded once per kernel call of more than one register tile: the
// tiles then load them instead of decoding each chunk again (six to seven operations a chunk for
// Q6_K: a third of its prefill time on AVX2 at 4 tokens a tile). Per 32-column sub-block s, row
// half h and element half HH: the unsigned quants of chunks C = 0..3 and, where asked (kFactors:
// the AVX-VNNI kernels; AVX2's take one scale per super-block and read the scale bytes), the half's
// factors (half_factors' dw and mw). In an unnamed namespace: each ISA file gets its own copy, as
// the static inline functions above.
namespace {
class HalfPanel {
 public:
  __m256i quants(int64_t s, int hh, int c, int h) const { return u_[s * 16 + (hh * 4 + c) * 2 + h].v; }
  __m256 dw(int64_t s, int hh, int h) const { return dw_[s * 4 + hh * 2 + h].v; }
  __m256 mw(int64_t s, int hh, int h) const { return mw_[s * 4 + hh * 2 + h].v; }

  // Decodes n_halves row halves of a group of nb 32-column sub-blocks at w (streamed once:
  // prefetch_share prefetch_bytes ahead).
  template <Kind K, bool kFactors>
  void decode(const uint8_t* w, int64_t nb, int n_halves, size_t prefetch_bytes) {
    const size_t n = static_cast<size_t>(nb) * 4;
    if (dw_.size() < n) {
      u_.resize(n * 4);
      dw_.resize(n);
      mw_.resize(n);
    }
    for (int64_t b = 0; b < nb; b += kSubBlocks<K>, w += kBlockBytes<K>)
      for (int j = 0; j < kSubBlocks<K>; ++j) {
        prefetch_share<K>(w + prefetch_bytes, j);
        const uint8_t* qs = w + kQsOffset<K> + j * kSubBlockBytes<K>;
        for (int h = 0; h < n_halves; ++h) {
          Quants* u = u_.data() + (b + j) * 16 + h;
          u[0].v = half_quants<K, 0, 0>(qs, h);
          u[2].v = half_quants<K, 1, 0>(qs, h);
          u[4].v = half_quants<K, 2, 0>(qs, h);
          u[6].v = half_quants<K, 3, 0>(qs, h);
          u[8].v = half_quants<K, 0, 1>(qs, h);
          u[10].v = half_quants<K, 1, 1>(qs, h);
          u[12].v = half_quants<K, 2, 1>(qs, h);
          u[14].v = half_quants<K, 3, 1>(qs, h);
          if constexpr (kFactors) {
            Factors* dw = dw_.data() + (b + j) * 4 + h;
            Factors* mw = mw_.data() + (b + j) * 4 + h;
            mw[0].v = mw[2].v = _mm256_setzero_ps();
            half_factors<K, 0>(w, j, h, dw[0].v, mw[0].v);
            half_factors<K, 1>(w, j, h, dw[2].v, mw[2].v);
          }
        }
      }
  }

 private:
  struct Quants {
    __m256i v;
  };
  struct Factors {
    __m256 v;
  };
  std::vector<Quants> u_;    // [sub-block][HH][C][h] 32 quants
  std::vector<Factors> dw_;  // [sub-block][HH][h] 8 rows
  std::vector<Factors> mw_;  // [sub-block][HH][h] 8 rows (Q2_K)
};
}  // namespace

}  // namespace strata::cpu::packed
