// TQ2_0 x Q8_K, scalar reference: f = d, sc = 1, w = q - 1.
#include <cstring>

#include "backend/cpu/block_access.h"
#include "backend/cpu/iq_decoders.h"
#include "backend/cpu/iq_scalar_dot.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace strata::cpu {

float tq2_0_decode(const uint8_t* blk, int8_t* w, int* sc) {
  const uint8_t* qs = blk + offsetof(BlockTQ2_0, qs);
  for (int c = 0; c < 2; ++c)
    for (int l = 0; l < 4; ++l)
      for (int m = 0; m < 32; ++m)
        w[128 * c + 32 * l + m] = static_cast<int8_t>(((qs[32 * c + m] >> (2 * l)) & 3) - 1);
  for (int h = 0; h < 16; ++h) sc[h] = 1;
  return load_half(blk + offsetof(BlockTQ2_0, d));
}

namespace {

constexpr auto vec_dot = iq_vec_dot<sizeof(BlockTQ2_0), tq2_0_decode>;

}  // namespace

const TypeKernels& tq2_0_kernels_scalar() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_scalar,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = scalar_gemm_tile<vec_dot>,
                                       .tile_rows = 1,
                                       .tile_cols = 1};
  return kernels;
}

}  // namespace strata::cpu
