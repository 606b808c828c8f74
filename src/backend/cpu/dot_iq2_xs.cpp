// IQ2_XS x Q8_K, scalar reference: f = d / 8, sc = 2 s + 1 per 16, w = grid * sign.
#include <cstring>

#include "backend/cpu/block_access.h"
#include "backend/cpu/iq_decoders.h"
#include "backend/cpu/iq_scalar_dot.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace strata::cpu {

float iq2_xs_decode(const uint8_t* blk, int8_t* w, int* sc) {
  for (int g = 0; g < 32; ++g) {
    uint16_t q;
    std::memcpy(&q, blk + offsetof(BlockIQ2_XS, qs) + 2 * g, 2);
    apply_grid(kIq2xsGrid[q & 511], iq_signs_from7(q >> 9), 8, w + 8 * g);
  }
  for (int ib = 0; ib < 8; ++ib) {
    const uint8_t s = blk[offsetof(BlockIQ2_XS, scales) + ib];
    sc[2 * ib] = 2 * (s & 0xF) + 1;
    sc[2 * ib + 1] = 2 * (s >> 4) + 1;
  }
  return load_half(blk + offsetof(BlockIQ2_XS, d)) * 0.125f;
}

namespace {

constexpr auto vec_dot = iq_vec_dot<sizeof(BlockIQ2_XS), iq2_xs_decode>;

}  // namespace

const TypeKernels& iq2_xs_kernels_scalar() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_scalar,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = scalar_gemm_tile<vec_dot>,
                                       .tile_rows = 1,
                                       .tile_cols = 1};
  return kernels;
}

}  // namespace strata::cpu
