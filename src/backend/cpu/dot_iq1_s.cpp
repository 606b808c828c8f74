// IQ1_S x Q8_K, scalar reference: d (2 s + 1) (g + delta) with delta = +-1/8 is
// f = d / 8, sc = 2 s + 1 per 32, w = 8 g +- 1.
#include <cstring>

#include "backend/cpu/block_access.h"
#include "backend/cpu/iq_decoders.h"
#include "backend/cpu/iq_scalar_dot.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace strata::cpu {

float iq1_s_decode(const uint8_t* blk, int8_t* w, int* sc) {
  for (int ib = 0; ib < 8; ++ib) {
    uint16_t qh;
    std::memcpy(&qh, blk + offsetof(BlockIQ1_S, qh) + 2 * ib, 2);
    sc[2 * ib] = sc[2 * ib + 1] = 2 * ((qh >> 12) & 7) + 1;
    const int delta = qh & 0x8000 ? -1 : 1;
    for (int l = 0; l < 4; ++l) {
      const uint64_t g = kIq1sGrid[blk[offsetof(BlockIQ1_S, qs) + 4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
      for (int j = 0; j < 8; ++j)
        w[32 * ib + 8 * l + j] = static_cast<int8_t>(8 * static_cast<int8_t>((g >> (8 * j)) & 0xFF) + delta);
    }
  }
  return load_half(blk + offsetof(BlockIQ1_S, d)) * 0.125f;
}

namespace {

constexpr auto vec_dot = iq_vec_dot<sizeof(BlockIQ1_S), iq1_s_decode>;

}  // namespace

const TypeKernels& iq1_s_kernels_scalar() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_scalar,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = scalar_gemm_tile<vec_dot>,
                                       .tile_rows = 1,
                                       .tile_cols = 1};
  return kernels;
}

}  // namespace strata::cpu
