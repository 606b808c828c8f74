// IQ3_S x Q8_K, scalar reference: f = d, sc = 2 s + 1 per 32, w = grid * sign.
#include <cstring>

#include "backend/cpu/block_access.h"
#include "backend/cpu/iq_decoders.h"
#include "backend/cpu/iq_scalar_dot.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace strata::cpu {

float iq3_s_decode(const uint8_t* blk, int8_t* w, int* sc) {
  const uint8_t* qs = blk + offsetof(BlockIQ3_S, qs);
  const uint8_t* qh = blk + offsetof(BlockIQ3_S, qh);
  const uint8_t* signs = blk + offsetof(BlockIQ3_S, signs);
  for (int ib = 0; ib < 8; ++ib) {
    sc[2 * ib] = sc[2 * ib + 1] =
        2 * ((blk[offsetof(BlockIQ3_S, scales) + ib / 2] >> (4 * (ib % 2))) & 0xF) + 1;
    for (int l = 0; l < 4; ++l) {
      const int i = 8 * ib + 2 * l;  // grid entries i and i + 1: high index bits 2l, 2l + 1 of qh[ib]
      const uint32_t g1 = kIq3sGrid[qs[i] | (((qh[ib] >> (2 * l)) & 1) << 8)];
      const uint32_t g2 = kIq3sGrid[qs[i + 1] | (((qh[ib] >> (2 * l + 1)) & 1) << 8)];
      apply_grid(g1 | (uint64_t{g2} << 32), signs[4 * ib + l], 8, w + 32 * ib + 8 * l);
    }
  }
  return load_half(blk + offsetof(BlockIQ3_S, d));
}

namespace {

constexpr auto vec_dot = iq_vec_dot<sizeof(BlockIQ3_S), iq3_s_decode>;

}  // namespace

const TypeKernels& iq3_s_kernels_scalar() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_scalar,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = scalar_gemm_tile<vec_dot>,
                                       .tile_rows = 1,
                                       .tile_cols = 1};
  return kernels;
}

}  // namespace strata::cpu
