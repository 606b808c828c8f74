// TQ1_0 x Q8_K, scalar reference: f = d, sc = 1, w = trit - 1 (layout in quant/blocks.h).
#include <cstring>

#include "backend/cpu/block_access.h"
#include "backend/cpu/iq_decoders.h"
#include "backend/cpu/iq_scalar_dot.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace strata::cpu {

float tq1_0_decode(const uint8_t* blk, int8_t* w, int* sc) {
  const uint8_t* qs = blk + offsetof(BlockTQ1_0, qs);
  const uint8_t* qh = blk + offsetof(BlockTQ1_0, qh);
  for (int t = 0; t < 5; ++t)
    for (int m = 0; m < 32; ++m) w[32 * t + m] = static_cast<int8_t>(tq1_trit(qs[m], t) - 1);
  for (int t = 0; t < 5; ++t)
    for (int m = 0; m < 16; ++m) w[160 + 16 * t + m] = static_cast<int8_t>(tq1_trit(qs[32 + m], t) - 1);
  for (int t = 0; t < 4; ++t)
    for (int j = 0; j < 4; ++j) w[240 + 4 * t + j] = static_cast<int8_t>(tq1_trit(qh[j], t) - 1);
  for (int h = 0; h < 16; ++h) sc[h] = 1;
  return load_half(blk + offsetof(BlockTQ1_0, d));
}

namespace {

constexpr auto vec_dot = iq_vec_dot<sizeof(BlockTQ1_0), tq1_0_decode>;

}  // namespace

const TypeKernels& tq1_0_kernels_scalar() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_scalar,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = scalar_gemm_tile<vec_dot>,
                                       .tile_rows = 1,
                                       .tile_cols = 1};
  return kernels;
}

}  // namespace strata::cpu
