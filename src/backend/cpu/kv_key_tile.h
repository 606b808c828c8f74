// Attention scores against interleaved Q8_0 / Q4_0 key tiles (kv_layout.h): integer dot products
// of 16 keys (AVX-512), 8 keys (AVX2) or 4 keys (NEON, DotProd) per vector, one table per ISA level. The
// scalar version (kv_key_tile.cpp) is the reference the SIMD ones are tested against.
//
// Queries are quantized per 32-element group as Q8_0 keys are (kv_codec.h: for heads of at most
// 16, the error-minimising scale of kv_quant_group.h with levels in [-127, 127]; else llama.cpp's
// d = amax / 127; fp16 d), into a prepared row of
// kv_query_int8_bytes: int8 levels [n_groups * 32], then float scales [n_groups], then int32 sums
// of the levels [n_groups] (the zero point of unsigned key bytes is removed with them).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/kv_layout.h"
#include "core/cpu_features.h"

namespace strata::cpu {

constexpr int32_t kMaxQueryGroups = 18;  // 576-wide heads (kMaxHeadDim)

static inline size_t kv_query_int8_bytes(int32_t n_groups) {
  return static_cast<size_t>(n_groups) * (32 + 4 + 4);
}

struct KvKeyTileKernels {
  // x: [n_groups * 32] f32 (zero padded) -> one prepared query row.
  void (*prepare_query)(const float* x, int32_t n_groups, uint8_t* row);
  // s[r * bs + j] = sum_g d_q[r][g] * d_k[g][j] * sum_{e < 32} q[r][32 g + e] * k[j][32 g + e] for
  // r < n_rows <= 8, j < bs <= 32. q: n_rows prepared rows, q_stride bytes apart; tile: one
  // interleaved K tile of `type` (Q8_0 or Q4_0) with n_groups groups; s: [n_rows][bs]. A row's
  // operations do not depend on the other rows.
  void (*scores)(KvType type, const uint8_t* q, size_t q_stride, int n_rows, const uint8_t* tile,
                 int32_t n_groups, int bs, float* s);
};

const KvKeyTileKernels& kv_key_tile_kernels(IsaLevel isa);

// Per-ISA tables (kv_key_tile.cpp, kv_key_tile_avx2.cpp, kv_key_tile_avx512.cpp,
// kv_key_tile_neon.cpp, kv_key_tile_dotprod.cpp).
const KvKeyTileKernels& kv_key_tile_kernels_scalar();
const KvKeyTileKernels& kv_key_tile_kernels_avx2();
const KvKeyTileKernels& kv_key_tile_kernels_avx512();
const KvKeyTileKernels& kv_key_tile_kernels_neon();
const KvKeyTileKernels& kv_key_tile_kernels_dotprod();

}  // namespace strata::cpu
