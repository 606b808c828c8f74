// TQ2_0 x Q8_K kernels for AVX2: iq_tile_avx2.h's tile over dot_tq2_0_simd.h's block decoding.
#include "backend/cpu/dot_tq2_0_simd.h"
#include "backend/cpu/iq_type_kernels_x86.h"
#include "backend/cpu/kernel_decls.h"

namespace strata::cpu {
namespace {

constexpr TypeKernels kKernels = iq_type_kernels<Ops, 2, 4, TernaryTile<Ops>>(quantize_row_q8_k_avx2);

}  // namespace

const TypeKernels& tq2_0_kernels_avx2() {
  return kKernels;
}

}  // namespace strata::cpu
