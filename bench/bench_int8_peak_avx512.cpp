// The int8 dot-product peak of one core: independent vpdpbusd chains (64 multiply-adds each)
// with nothing else in the loop. Only called when the CPU supports AVX-512 VNNI.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstdint>

namespace strata::bench {

// Runs `iters` rounds of 12 independent vpdpbusd; returns a value depending on all results.
int64_t vnni_chains(int64_t iters) {
  __m512i acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_epi32(i);
  __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(5);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
    __asm__ volatile("" : "+v"(a), "+v"(b));  // keeps the operands opaque to the optimizer
  }
  __m512i s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_epi32(s, acc[i]);
  return _mm512_reduce_add_epi32(s);
}

}  // namespace strata::bench
