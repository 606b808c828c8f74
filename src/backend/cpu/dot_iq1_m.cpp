// IQ1_M x Q8_K, scalar reference: d (2 s + 1) (g + delta) with delta = +-1/8 is
// f = d / 8, sc = 2 s + 1 per 16, w = 8 g +- 1 (delta's sign per group of 8).
#include <cstring>

#include "backend/cpu/block_access.h"
#include "backend/cpu/iq_decoders.h"
#include "backend/cpu/iq_scalar_dot.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace strata::cpu {

float iq1_m_decode(const uint8_t* blk, int8_t* w, int* sc) {
  const uint8_t* scales = blk + offsetof(BlockIQ1_M, scales);
  for (int g = 0; g < 32; ++g) {
    const int nibble = (blk[offsetof(BlockIQ1_M, qh) + g / 2] >> (4 * (g % 2))) & 0xF;
    const uint64_t grid = kIq1sGrid[blk[offsetof(BlockIQ1_M, qs) + g] | ((nibble & 7) << 8)];
    const int delta = nibble & 8 ? -1 : 1;
    for (int j = 0; j < 8; ++j)
      w[8 * g + j] = static_cast<int8_t>(8 * static_cast<int8_t>((grid >> (8 * j)) & 0xFF) + delta);
  }
  for (int h = 0; h < 16; ++h) sc[h] = 2 * iq1_m_sub_scale(scales, h) + 1;
  return fp16_to_f32(iq1_m_scale(scales)) * 0.125f;
}

namespace {

constexpr auto vec_dot = iq_vec_dot<sizeof(BlockIQ1_M), iq1_m_decode>;

}  // namespace

const TypeKernels& iq1_m_kernels_scalar() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_scalar,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = scalar_gemm_tile<vec_dot>,
                                       .tile_rows = 1,
                                       .tile_cols = 1};
  return kernels;
}

}  // namespace strata::cpu
