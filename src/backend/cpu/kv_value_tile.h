// The weighted sum of a Q8_0 V tile in integers: after the online softmax of a tile, each query
// row's weights w[j] = p[j] * d[j][g] (the probability times token j's scale of group g) are
// quantized to unsigned 8 bits per (row, group of 32 columns), so that the sum over the tile's
// tokens is u8 x s8 dot products of 4 tokens a lane (vpdpbusd) and the V bytes are never
// converted to f32. One table per ISA level; kv_value_tile.cpp is the scalar reference the SIMD
// versions are tested against (tests/backend/test_kv_value_tile.cpp). Levels without an integer
// kernel (AVX2, aarch64) have a null entry: the driver dequantizes V there.
//
// The 8-bit weights round each w[j] by at most 0.5 / 255 of the row's largest w in the tile and
// group; the probabilities themselves are exp(x - running max) <= 1. The KLD this costs is in
// BENCHMARKS.md ("Q8_0 K and V").
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/cpu_features.h"

namespace strata::cpu {

constexpr int32_t kMaxValueGroups = 18;  // 576-wide heads (kMaxHeadDim)

struct KvValueTileKernels {
  // For r < n_rows <= 8 and e < hd_v, g = e / 32:
  //   acc[r][e] = acc[r][e] * corr[r] + su[r][g] * sum_{j = first..last} u[r][g][j] * q[j][e]
  // where w[j] = p[r * bs + j] * d[j][g], su[r][g] = max_j w[j] / 255 and u[r][g][j] =
  // round(w[j] * (255 / max_j w[j])) (0 when the max is below 1e-30: the group adds nothing).
  // acc: n_rows pointers to [hd_v]; p: [n_rows][bs] probabilities (>= 0, 0 outside [first,
  // last]); v: the tile's token rows of Q8_0 groups (BlockQ8_0: fp16 d, int8 q[32]) over the
  // padded head, row_bytes apart, bs <= 32 rows; corr: [n_rows]. A row's operations do not
  // depend on the other rows. Returns false, with acc untouched, when a scale d[j][g] of a token
  // in [first, last] is negative, infinite or NaN (narrow heads' searched scales can be
  // negative): the caller then takes the float path.
  bool (*accumulate_q8_0)(float* const* acc, int n_rows, const float* p, int bs, const uint8_t* v,
                          size_t row_bytes, int hd_v, int first, int last, const float* corr);
};

// The table of `isa` (clamped to the CPU); accumulate_q8_0 may be null (see above).
const KvValueTileKernels& kv_value_tile_kernels(IsaLevel isa);

// Per-ISA tables (kv_value_tile.cpp, kv_value_tile_avxvnni.cpp, kv_value_tile_avx512.cpp).
const KvValueTileKernels& kv_value_tile_kernels_scalar();
const KvValueTileKernels& kv_value_tile_kernels_avxvnni();
const KvValueTileKernels& kv_value_tile_kernels_avx512();

}  // namespace strata::cpu
