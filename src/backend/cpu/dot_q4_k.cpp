// Q4_K x Q8_K dot products, scalar reference: plain C++ following the block definition in
// quant/blocks.h element by element. It is the ground truth the AVX2 / AVX-512 kernels are
// tested against, and the kernel used when STRATA_ISA=scalar.
#include <cstring>

#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "quant/blocks.h"

namespace strata::cpu {

namespace {

// Element e (0..255): each 64 elements use 32 bytes of qs, the first 32 in the low nibbles,
// the next 32 in the high nibbles. Value in [0, 15].
int quant_of(const BlockQ4_K& w, int e) {
  const int pair = e / 64, k = e % 64;
  const uint8_t byte = w.qs[32 * pair + k % 32];
  return k < 32 ? (byte & 0xF) : (byte >> 4);
}

// One super-block's contribution: w . a with both dequantized.
float block_dot(const BlockQ4_K& w, const BlockQ8_K& a) {
  // x = d * sc[s] * q - dmin * m[s], sub-block s = e / 32.
  int32_t sum_q = 0, sum_m = 0;
  for (int s = 0; s < kQK_K / 32; ++s) {
    uint8_t sc, m;
    unpack_k4_scale_min(w.scales, s, &sc, &m);
    int32_t dot = 0, asum = 0;
    for (int e = 32 * s; e < 32 * s + 32; ++e) {
      dot += quant_of(w, e) * a.qs[e];
      asum += a.qs[e];
    }
    sum_q += sc * dot;
    sum_m += m * asum;
  }
  return a.d *
         (fp16_to_f32(w.d) * static_cast<float>(sum_q) - fp16_to_f32(w.dmin) * static_cast<float>(sum_m));
}

// w: [n / 256] Q4_K blocks, a: [n / 256] Q8_K blocks.
constexpr auto vec_dot = blockwise_vec_dot<BlockQ4_K, BlockQ8_K, kQK_K, block_dot>;

}  // namespace

const TypeKernels& q4_k_kernels_scalar() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_scalar,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = scalar_gemm_tile<vec_dot>,
                                       .tile_rows = 1,
                                       .tile_cols = 1};
  return kernels;
}

}  // namespace strata::cpu
