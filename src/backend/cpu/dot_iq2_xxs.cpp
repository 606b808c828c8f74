// IQ2_XXS x Q8_K, scalar reference: f = d / 8, sc = 2 s + 1 per 32, w = grid * sign.
#include <cstring>

#include "backend/cpu/block_access.h"
#include "backend/cpu/iq_decoders.h"
#include "backend/cpu/iq_scalar_dot.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace strata::cpu {

float iq2_xxs_decode(const uint8_t* blk, int8_t* w, int* sc) {
  for (int ib = 0; ib < 8; ++ib) {
    uint8_t idx[4];
    uint32_t signs;
    std::memcpy(idx, blk + offsetof(BlockIQ2_XXS, qs) + 8 * ib, 4);
    std::memcpy(&signs, blk + offsetof(BlockIQ2_XXS, qs) + 8 * ib + 4, 4);
    sc[2 * ib] = sc[2 * ib + 1] = 2 * static_cast<int>(signs >> 28) + 1;
    for (int l = 0; l < 4; ++l)
      apply_grid(kIq2xxsGrid[idx[l]], iq_signs_from7(signs >> (7 * l)), 8, w + 32 * ib + 8 * l);
  }
  return load_half(blk + offsetof(BlockIQ2_XXS, d)) * 0.125f;
}

namespace {

constexpr auto vec_dot = iq_vec_dot<sizeof(BlockIQ2_XXS), iq2_xxs_decode>;

}  // namespace

const TypeKernels& iq2_xxs_kernels_scalar() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_scalar,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = scalar_gemm_tile<vec_dot>,
                                       .tile_rows = 1,
                                       .tile_cols = 1};
  return kernels;
}

}  // namespace strata::cpu
