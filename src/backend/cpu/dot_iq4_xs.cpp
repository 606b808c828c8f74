// IQ4_XS x Q8_K, scalar reference: f = d, sc = ls - 32 per 32, w = kIq4nlValues[q].
#include <cstring>

#include "backend/cpu/block_access.h"
#include "backend/cpu/iq_scalar_dot.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace strata::cpu {
namespace {

float decode(const uint8_t* blk, int8_t* w, int* sc) {
  uint16_t scales_h;
  std::memcpy(&scales_h, blk + offsetof(BlockIQ4_XS, scales_h), 2);
  for (int ib = 0; ib < 8; ++ib) {
    sc[2 * ib] = sc[2 * ib + 1] = iq4_xs_scale(scales_h, blk + offsetof(BlockIQ4_XS, scales_l), ib);
    const uint8_t* qs = blk + offsetof(BlockIQ4_XS, qs) + 16 * ib;
    for (int j = 0; j < 16; ++j) {
      w[32 * ib + j] = kIq4nlValues[qs[j] & 0xF];
      w[32 * ib + j + 16] = kIq4nlValues[qs[j] >> 4];
    }
  }
  return load_half(blk + offsetof(BlockIQ4_XS, d));
}

constexpr auto vec_dot = iq_vec_dot<sizeof(BlockIQ4_XS), decode>;

}  // namespace

const TypeKernels& iq4_xs_kernels_scalar() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_scalar,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = scalar_gemm_tile<vec_dot>,
                                       .tile_rows = 1,
                                       .tile_cols = 1};
  return kernels;
}

}  // namespace strata::cpu
