// IQ3_XXS x Q8_K, scalar reference: f = d / 4, sc = 2 s + 1 per 32, w = grid * sign.
#include <cstring>

#include "backend/cpu/block_access.h"
#include "backend/cpu/iq_decoders.h"
#include "backend/cpu/iq_scalar_dot.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace strata::cpu {

float iq3_xxs_decode(const uint8_t* blk, int8_t* w, int* sc) {
  const uint8_t* qs = blk + offsetof(BlockIQ3_XXS, qs);
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t aux;
    std::memcpy(&aux, qs + kQK_K / 4 + 4 * ib, 4);
    sc[2 * ib] = sc[2 * ib + 1] = 2 * static_cast<int>(aux >> 28) + 1;
    for (int l = 0; l < 4; ++l) {
      const uint8_t s = iq_signs_from7(aux >> (7 * l));
      const uint64_t g =
          kIq3xxsGrid[qs[8 * ib + 2 * l]] | (uint64_t{kIq3xxsGrid[qs[8 * ib + 2 * l + 1]]} << 32);
      apply_grid(g, s, 8, w + 32 * ib + 8 * l);
    }
  }
  return load_half(blk + offsetof(BlockIQ3_XXS, d)) * 0.25f;
}

namespace {

constexpr auto vec_dot = iq_vec_dot<sizeof(BlockIQ3_XXS), iq3_xxs_decode>;

}  // namespace

const TypeKernels& iq3_xxs_kernels_scalar() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_scalar,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = scalar_gemm_tile<vec_dot>,
                                       .tile_rows = 1,
                                       .tile_cols = 1};
  return kernels;
}

}  // namespace strata::cpu
