// Q4_K x Q8_K dot products for AVX-VNNI: the AVX2 kernels (dot_q4_k_avx2.cpp, format in
// kquant_q4_k_avx2.h) with vpdpwssd fusing each chunk's scale multiply and int32 accumulation
// (kquant_tile_avx2.inc), for CPUs with 256-bit VNNI and no AVX-512.
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/kquant_q4_k_avx2.h"

namespace strata::cpu {

namespace {

#include "backend/cpu/kquant_tile_avx2.inc"

}  // namespace

const TypeKernels& q4_k_kernels_avxvnni() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_avx2,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = gemm_tile,
                                       .tile_rows = kTileR,
                                       .tile_cols = kTileC};
  return kernels;
}

}  // namespace strata::cpu
