// The weight quantization of kv_value_tile.h, shared by every ISA level's file so that all of
// them compute the same bytes: the scale checks and the per-(row, group) u8 weights.
// Internal linkage only.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backend/cpu/kv_value_tile.h"
#include "core/fp16.h"

namespace strata::cpu {
namespace {

constexpr size_t kQ8GroupBytes = 34;  // BlockQ8_0: fp16 d, int8 q[32]
constexpr float kMinWeight = 1e-30f;  // a group whose largest weight is below this adds nothing

// d: [n_groups][32] the scales of tokens [first, last], 0 elsewhere. False if one is negative,
// infinite or NaN.
inline bool load_value_scales(const uint8_t* v, size_t row_bytes, int n_groups, int bs, int first, int last,
                              float* d) {
  for (int g = 0; g < n_groups; ++g)
    for (int j = 0; j < 32; ++j) {
      float x = 0.0f;
      if (j >= first && j <= last && j < bs) {
        fp16_t h;
        std::memcpy(&h, v + static_cast<size_t>(j) * row_bytes + static_cast<size_t>(g) * kQ8GroupBytes, 2);
        if ((h & 0x8000) != 0 && (h & 0x7FFF) != 0) return false;  // negative (-0 is fine)
        if ((h & 0x7C00) == 0x7C00) return false;                  // inf or NaN
        x = fp16_to_f32(h);
      }
      d[g * 32 + j] = x;
    }
  return true;
}

// The u8 weights of a tile's query rows (8 at most) for every group, as the SIMD kernels use them:
// u[r] and su[r] from quantize(p + r * bs, d + 32 g, bs, u[r] + 32 g) (the level's rounding of
// the scalar reference's) for r < n_rows; the rows past n_rows weigh 0.
constexpr int kValueTileRows = 8;
struct ValueTileWeights {
  alignas(64) uint8_t u[kValueTileRows][kMaxValueGroups * 32];
  float su[kValueTileRows][kMaxValueGroups];
};

template <class Quantize>
inline void quantize_tile_weights(Quantize quantize, int n_rows, const float* p, int bs, const float* d,
                                  int n_groups, ValueTileWeights& w) {
  for (int r = 0; r < kValueTileRows; ++r)
    for (int g = 0; g < n_groups; ++g) {
      if (r < n_rows) {
        w.su[r][g] = quantize(p + r * bs, d + g * 32, bs, w.u[r] + g * 32);
      } else {
        w.su[r][g] = 0.0f;
        std::memset(w.u[r] + g * 32, 0, 32);
      }
    }
}

}  // namespace
}  // namespace strata::cpu
