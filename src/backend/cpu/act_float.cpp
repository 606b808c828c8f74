// Scalar reference of the float activation converters (F16, BF16, F32), rounding to nearest
// even exactly as core/fp16.h does; the SIMD versions must match them bit for bit.
#include <cstring>

#include "backend/cpu/kernel_decls.h"
#include "core/fp16.h"

namespace strata::cpu {

// x: [n] f32 -> y: [n] fp16 at any address.
void quantize_row_f16_scalar(const float* x, void* y, int64_t n) {
  auto* out = static_cast<uint8_t*>(y);
  for (int64_t i = 0; i < n; ++i) {
    const fp16_t h = f32_to_fp16(x[i]);
    std::memcpy(out + i * sizeof h, &h, sizeof h);
  }
}

// x: [n] f32 -> y: [n] bf16 at any address.
void quantize_row_bf16_scalar(const float* x, void* y, int64_t n) {
  auto* out = static_cast<uint8_t*>(y);
  for (int64_t i = 0; i < n; ++i) {
    const bf16_t h = f32_to_bf16(x[i]);
    std::memcpy(out + i * sizeof h, &h, sizeof h);
  }
}

// x: [n] f32 -> y: [n] f32 at any address.
void quantize_row_f32(const float* x, void* y, int64_t n) {
  std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
}

}  // namespace strata::cpu
