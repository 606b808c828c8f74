// Turns a register-tile kernel with compile-time shape into a gemm_tile entry point that takes
// any nr <= kMaxTileRows, nc <= kMaxTileCols: full TR x TC tiles, then single rows at the edge,
// columns in chunks of at most TC.
//
// Included by ISA-specific files: everything here has internal linkage (anonymous namespace), so
// each file gets its own copy compiled for its ISA.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace strata::cpu {
namespace {

// Kernel: a class with
//   template <int NR, int NC> static void run(int64_t n, const uint8_t* w, size_t w_stride,
//                                            const uint8_t* a, size_t a_stride, float* out,
//                                            size_t out_stride);
template <class Kernel, int NR, int TC, int NC = 1>
inline void run_cols(int nc, int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, float* out,
                     size_t os) {
  if constexpr (NC < TC) {
    if (nc != NC) return run_cols<Kernel, NR, TC, NC + 1>(nc, n, w, ws, a, as, out, os);
  }
  Kernel::template run<NR, NC>(n, w, ws, a, as, out, os);
}

template <class Kernel, int TR, int TC>
void dispatch_tile(int64_t n, int nr, int nc, const void* w, size_t ws, const void* a, size_t as, float* out,
                   size_t os) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  for (int c0 = 0; c0 < nc; c0 += TC) {
    const int cn = std::min(TC, nc - c0);
    int r0 = 0;
    for (; r0 + TR <= nr; r0 += TR)
      run_cols<Kernel, TR, TC>(cn, n, wb + r0 * ws, ws, ab + c0 * as, as, out + c0 * os + r0, os);
    for (; r0 < nr; ++r0)
      run_cols<Kernel, 1, TC>(cn, n, wb + r0 * ws, ws, ab + c0 * as, as, out + c0 * os + r0, os);
  }
}

// dispatch_tile whose one-token calls (decode) take TR1 rows at a time and the others TR. The
// float tiles stream their decode rows from memory, each prefetching the next tile's rows at the
// same offset: as few rows side by side as keep the FMAs busy, since every row is a stream the
// hardware prefetchers take up late (a 4 KiB row is one page). F16 decode of the 1.1B shape on
// Zen 5 (BM_DecodeRoofline, of the read bandwidth): AVX-512 one row at a time 0.98-0.99, 2 rows
// 0.85, 8 rows 0.61-0.78 (before: 4 KiB ahead within each row); AVX2 3 rows 0.80-0.84 against
// 0.70-0.78 for 9 (one row's chain of 4-cycle FMAs of 8 floats tops out near 17 GB/s a thread:
// 0.48 there in the 80 GB/s windows). NEON streams 8. TR1 is 1 or a multiple of TR; the kernels
// report max(TR1, TR) as their tile_rows. Every output is the same sequence of operations in
// either tile (batch invariance, kernels.h).
template <class Kernel, int TR1, int TR, int TC>
void dispatch_tile_wide_decode(int64_t n, int nr, int nc, const void* w, size_t ws, const void* a, size_t as,
                               float* out, size_t os) {
  static_assert(TR1 == 1 || TR1 % TR == 0);
  if (nc == 1)
    dispatch_tile<Kernel, TR1, 1>(n, nr, nc, w, ws, a, as, out, os);
  else
    dispatch_tile<Kernel, TR, TC>(n, nr, nc, w, ws, a, as, out, os);
}

// vec_dot through the 1 x 1 tile.
template <class Kernel>
float tile_vec_dot(int64_t n, const void* w, const void* a) {
  float out;
  Kernel::template run<1, 1>(n, static_cast<const uint8_t*>(w), 0, static_cast<const uint8_t*>(a), 0, &out,
                             0);
  return out;
}

}  // namespace
}  // namespace strata::cpu
