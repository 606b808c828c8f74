// NEON kernels for BF16 weights against BF16 activations (widened by a 16-bit shift, FMA); the
// tile is float_tile_neon.h's.
#include <cstring>

#include "backend/cpu/float_tile_neon.h"
#include "backend/cpu/kernel_decls.h"
#include "core/fp16.h"

namespace strata::cpu {
namespace {

struct Ops {
  static constexpr size_t kElemBytes = 2;
  static float32x4_t load4(const uint8_t* p) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p)), 16));
  }
  static float elem(const uint8_t* p, int64_t i) {
    bf16_t h;
    std::memcpy(&h, p + i * 2, 2);
    return bf16_to_f32(h);
  }
};

constexpr TypeKernels kKernels = float_kernels_neon<Ops>(TensorType::BF16, quantize_row_bf16_scalar);

}  // namespace

const TypeKernels& bf16_kernels_neon() {
  return kKernels;
}

}  // namespace strata::cpu
