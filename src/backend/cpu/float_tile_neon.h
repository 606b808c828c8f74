// The NEON register tile of the float types (F32, F16, BF16), generic over an element Ops class
// (defined in each dot_<type>_neon.cpp). Internal linkage: included only by aarch64 files.
//
// Ops provides:
//   kElemBytes          bytes per element
//   load4(p)            4 elements at p (any address) as floats
//   elem(p, i)          element i as float (the tail)
#pragma once

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

#include "backend/cpu/kernels.h"
#include "backend/cpu/tile_dispatch.h"

namespace strata::cpu {
namespace {

template <class Ops>
struct FloatTileNeon {
  // Decode (one column) streams NR rows side by side: fetch each 4 KiB ahead of the hardware
  // prefetchers, as the x86 float tiles do.
  static constexpr size_t kPrefetch = 4096;

  template <int NR, int NC>
  static void run(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, float* out,
                  size_t os) {
    // One accumulator per output whatever the tile shape: every output is then the same
    // sequence of float operations in any tile (batch invariance, see kernels.h).
    constexpr size_t E = Ops::kElemBytes;
    float32x4_t acc[NR][NC];
    for (int r = 0; r < NR; ++r)
      for (int c = 0; c < NC; ++c) acc[r][c] = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      if constexpr (NC == 1) {
        if ((i * E) % 64 == 0)
          for (int r = 0; r < NR; ++r) __builtin_prefetch(w + r * ws + i * E + kPrefetch);
      }
      float32x4_t wv[NR];
      for (int r = 0; r < NR; ++r) wv[r] = Ops::load4(w + r * ws + i * E);
      for (int c = 0; c < NC; ++c) {
        const float32x4_t av = Ops::load4(a + c * as + i * E);
        for (int r = 0; r < NR; ++r) acc[r][c] = vfmaq_f32(acc[r][c], wv[r], av);
      }
    }
    for (int r = 0; r < NR; ++r)
      for (int c = 0; c < NC; ++c) {
        float sum = vaddvq_f32(acc[r][c]);
        for (int64_t j = i; j < n; ++j) sum += Ops::elem(w + r * ws, j) * Ops::elem(a + c * as, j);
        out[c * os + r] = sum;
      }
  }
};

// The kernel table of a float type at the NEON level: prefill tiles of 4 rows x 4 tokens (16
// accumulators, 4 weight vectors and one activation of the 32 registers); decode streams 8 rows
// at once (tile_dispatch.h).
template <class Ops>
constexpr TypeKernels float_kernels_neon(TensorType type, void (*from_float)(const float*, void*, int64_t)) {
  using Tile = FloatTileNeon<Ops>;
  constexpr int kDecodeRows = 8, kTileRows = 4, kTileCols = 4;
  return {type,
          from_float,
          tile_vec_dot<Tile>,
          dispatch_tile_wide_decode<Tile, kDecodeRows, kTileRows, kTileCols>,
          kDecodeRows,
          kTileCols};
}

}  // namespace
}  // namespace strata::cpu
