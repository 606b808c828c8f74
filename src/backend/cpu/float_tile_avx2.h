// The AVX2 register tile of the float types (F32, F16, BF16), generic over an element Ops class
// (defined in each dot_<type>_avx2.cpp). Internal linkage: included only by AVX2 files.
//
// Ops provides:
//   kElemBytes          bytes per element
//   load8(p)            8 elements at p (any address) as floats
//   elem(p, i)          element i as float (the tail)
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/simd_avx2.h"

namespace strata::cpu {
namespace {

template <class Ops>
struct FloatTileAvx2 {
  // Decode (one column) streams NR rows side by side, each a stream the hardware prefetchers start
  // late on (a 4 KiB row is one page): fetch the next tile's rows at the same offset, as
  // prefetch_next_rows does. Fetching 4 KiB ahead within each row instead left the rows of 4 KiB
  // (q, k, v, gate, up, output of the 1.1B shape) at 0.73-0.77 of the read bandwidth.
  template <int NR, int NC>
  static void run(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, float* out,
                  size_t os) {
    // One accumulator per output whatever the tile shape: every output is then the same
    // sequence of float operations in any tile (batch invariance, see kernels.h).
    constexpr size_t E = Ops::kElemBytes;
    __m256 acc[NR][NC];
    for (int r = 0; r < NR; ++r)
      for (int c = 0; c < NC; ++c) acc[r][c] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      if constexpr (NC == 1) {
        if ((i * E) % 64 == 0)
          for (int r = 0; r < NR; ++r)
            _mm_prefetch(reinterpret_cast<const char*>(w + (NR + r) * ws + i * E), _MM_HINT_T0);
      }
      step<NR, NC>(acc, w, ws, a, as, i * E);
    }
    for (int r = 0; r < NR; ++r)
      for (int c = 0; c < NC; ++c) {
        float sum = hsum_f32x8(acc[r][c]);
        for (int64_t j = i; j < n; ++j) sum += Ops::elem(w + r * ws, j) * Ops::elem(a + c * as, j);
        out[c * os + r] = sum;
      }
  }

  template <int NR, int NC>
  static inline void step(__m256 (&acc)[NR][NC], const uint8_t* w, size_t ws, const uint8_t* a, size_t as,
                          size_t off) {
    __m256 wv[NR];
    for (int r = 0; r < NR; ++r) wv[r] = Ops::load8(w + r * ws + off);
    for (int c = 0; c < NC; ++c) {
      const __m256 av = Ops::load8(a + c * as + off);
      for (int r = 0; r < NR; ++r) acc[r][c] = _mm256_fmadd_ps(wv[r], av, acc[r][c]);
    }
  }
};

}  // namespace
}  // namespace strata::cpu
