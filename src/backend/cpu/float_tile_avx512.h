// The AVX-512 register tile of the float types, generic over an element Ops class (defined in
// each dot_<type>_avx512.cpp). Internal linkage: included only by AVX-512 files. Tails use masked
// loads (masked-off elements read as zero, so they add nothing).
//
// Ops provides:
//   kStep                elements per step (16, or 32 for the BF16 pair dot product)
//   kElemBytes           bytes per element
//   Mask, Vec            the mask type of one step (__mmask16 / __mmask32) and the loaded vector
//   load(p), load(p, mask) one step of elements at p (any address); masked-off ones zero
//   fma(acc, w, a)       acc + the element-wise products of w and a, summed into 16 float lanes
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace strata::cpu {
namespace {

template <class Ops>
struct FloatTileAvx512 {
  // Decode (one column) streams NR rows side by side, each a stream the hardware prefetchers start
  // late on (a 4 KiB row is one page): fetch the next tile's rows at the same offset, as
  // prefetch_next_rows does. Fetching 4 KiB ahead within each row instead left the rows of 4 KiB
  // (q, k, v, gate, up, output of the 1.1B shape) at 0.73-0.77 of the read bandwidth.
  template <int NR, int NC>
  static void run(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, float* out,
                  size_t os) {
    // One accumulator per output whatever the tile shape: every output is then the same
    // sequence of float operations in any tile (batch invariance, see kernels.h).
    constexpr int64_t S = Ops::kStep;
    constexpr size_t E = Ops::kElemBytes;
    using Mask = typename Ops::Mask;
    constexpr Mask kAll = static_cast<Mask>(~Mask{0});
    __m512 acc[NR][NC];
    for (int r = 0; r < NR; ++r)
      for (int c = 0; c < NC; ++c) acc[r][c] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + S <= n; i += S) {
      if constexpr (NC == 1) {
        if ((i * E) % 64 == 0)
          for (int r = 0; r < NR; ++r)
            _mm_prefetch(reinterpret_cast<const char*>(w + (NR + r) * ws + i * E), _MM_HINT_T0);
      }
      step<NR, NC, true>(acc, w, ws, a, as, i * E, kAll);
    }
    if (i < n) step<NR, NC, false>(acc, w, ws, a, as, i * E, static_cast<Mask>((Mask{1} << (n - i)) - 1));
    for (int r = 0; r < NR; ++r)
      for (int c = 0; c < NC; ++c) out[c * os + r] = _mm512_reduce_add_ps(acc[r][c]);
  }

  // One step of kStep elements; kFull: plain loads (masked loads cost more), else the tail.
  template <int NR, int NC, bool kFull>
  static inline void step(__m512 (&acc)[NR][NC], const uint8_t* w, size_t ws, const uint8_t* a, size_t as,
                          size_t off, typename Ops::Mask mask) {
    typename Ops::Vec wv[NR];
    for (int r = 0; r < NR; ++r)
      wv[r] = kFull ? Ops::load(w + r * ws + off) : Ops::load(w + r * ws + off, mask);
    for (int c = 0; c < NC; ++c) {
      const typename Ops::Vec av = kFull ? Ops::load(a + c * as + off) : Ops::load(a + c * as + off, mask);
      for (int r = 0; r < NR; ++r) acc[r][c] = Ops::fma(acc[r][c], wv[r], av);
    }
  }
};

}  // namespace
}  // namespace strata::cpu
