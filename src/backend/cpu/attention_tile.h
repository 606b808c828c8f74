// The three steps the attention driver (attention.h) runs on each tile of keys, one table per
// ISA level: scores of up to kRowsPerPass query rows against an f32 K tile, the online-softmax
// update of those rows, and the weighted sum of the V tile into their accumulators.
//
// attention_tile.cpp is the scalar reference; attention_tile_avx2.cpp / _avx512.cpp / _neon.cpp are the SIMD
// versions, tested against it (tests/backend/test_attention_tile.cpp). In every version a row's
// operations are the same whatever the other rows are (batch invariance).
#pragma once

#include <cstdint>

#include "core/cpu_features.h"

namespace strata::cpu {

constexpr int kRowsPerPass = 8;  // query rows scored together (independent FMA chains)

// How raw scores q.k become logits: x = s * pre, then x = cap * tanh(x) when cap > 0 (gemma2's
// soft-capping, with pre = scale / cap); pre = scale otherwise.
struct ScoreMap {
  float pre;
  float cap;
};

struct AttentionTileKernels {
  // s[r * bs + j] = sum_e q[r][e] * kt[e * bs + j] for r < n_rows <= kRowsPerPass, j < bs <= 32.
  // q: n_rows pointers to [hd]; kt: [hd][bs] (K transposed, as the cache holds it); s: [n_rows][bs].
  void (*scores)(const float* const* q, int n_rows, const float* kt, int hd, int bs, float* s);
  // Online-softmax step of n_rows rows over the keys [first, last] of the tile: raw scores
  // s: [n_rows][bs] in; probabilities p: [n_rows][bs] out (0 outside [first, last]); corr:
  // [n_rows] the factor that rescales each row's accumulator to the new running max; running
  // max m and sum l: [n_rows] updated (m = -inf: nothing seen yet).
  void (*softmax)(const float* s, int n_rows, int bs, int first, int last, ScoreMap sm, float* m, float* l,
                  float* p, float* corr);
  // acc[r][e] = acc[r][e] * corr[r] + sum_{j = first..last} p[r * bs + j] * v[j * hd_v + e] for
  // e < hd_v. acc: n_rows pointers to [hd_v]; v: [bs][hd_v] V tile.
  void (*accumulate)(float* const* acc, int n_rows, const float* p, int bs, const float* v, int hd_v,
                     int first, int last, const float* corr);
};

const AttentionTileKernels& attention_tile_kernels(IsaLevel isa);
inline const AttentionTileKernels& attention_tile_kernels() {
  return attention_tile_kernels(isa_level());
}

// Per-ISA tables (attention_tile.cpp, attention_tile_avx2.cpp, attention_tile_avx512.cpp,
// attention_tile_neon.cpp).
const AttentionTileKernels& attention_tile_kernels_scalar();
const AttentionTileKernels& attention_tile_kernels_avx2();
const AttentionTileKernels& attention_tile_kernels_avx512();
const AttentionTileKernels& attention_tile_kernels_neon();

}  // namespace strata::cpu
