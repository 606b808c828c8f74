// NEON kernels for F16 weights against F16 activations (fcvtl widening, FMA); the tile is
// float_tile_neon.h's.
#include "backend/cpu/block_access.h"
#include "backend/cpu/float_tile_neon.h"
#include "backend/cpu/kernel_decls.h"

namespace strata::cpu {
namespace {

struct Ops {
  static constexpr size_t kElemBytes = 2;
  static float32x4_t load4(const uint8_t* p) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p))));
  }
  static float elem(const uint8_t* p, int64_t i) { return load_half(p + i * 2); }
};

constexpr TypeKernels kKernels = float_kernels_neon<Ops>(TensorType::F16, quantize_row_f16_scalar);

}  // namespace

const TypeKernels& f16_kernels_neon() {
  return kKernels;
}

}  // namespace strata::cpu
