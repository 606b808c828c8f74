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

// dispatch_tile whose one-token calls (decode) take TR1 rows at a time and the others TR: a
// one-column float tile has the registers for more rows, and decode streams those rows side by
// side (F16 GEMV on Zen 5: 8 rows read 15-25% faster than 4; prefill keeps its TR x TC tile,
// 10-15% faster than 8 x TC there). TR1 is a multiple of TR; the kernels report TR1 as their
// tile_rows so that decode calls get whole TR1 tiles. Every output is the same sequence of
// operations in either tile (batch invariance, kernels.h).
template <class Kernel, int TR1, int TR, int TC>
void dispatch_tile_wide_decode(int64_t n, int nr, int nc, const void* w, size_t ws, const void* a, size_t as,
                               float* out, size_t os) {
  static_assert(TR1 % TR == 0);
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
