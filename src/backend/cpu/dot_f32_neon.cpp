// NEON kernels for F32 weights against F32 activations; the tile is float_tile_neon.h's.
#include "backend/cpu/block_access.h"
#include "backend/cpu/float_tile_neon.h"
#include "backend/cpu/kernel_decls.h"

namespace strata::cpu {
namespace {

struct Ops {
  static constexpr size_t kElemBytes = 4;
  static float32x4_t load4(const uint8_t* p) { return vld1q_f32(reinterpret_cast<const float*>(p)); }
  static float elem(const uint8_t* p, int64_t i) { return load_f32(p + i * 4); }
};

constexpr TypeKernels kKernels = float_kernels_neon<Ops>(TensorType::F32, quantize_row_f32);

}  // namespace

const TypeKernels& f32_kernels_neon() {
  return kKernels;
}

}  // namespace strata::cpu
