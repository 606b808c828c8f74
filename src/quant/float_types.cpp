// F32, F16 and BF16 rows. Conversions round to nearest even (core/fp16.h); they keep IEEE
// semantics: inf stays inf, NaN stays NaN, finite values beyond the half range become inf.
#include <cstring>

#include "core/fp16.h"
#include "quant/codecs.h"

namespace strata::quant {

void dequantize_f32(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, n * sizeof(float));
}

void quantize_f32(const float* src, void* dst, int64_t n, const float*) {
  std::memcpy(dst, src, n * sizeof(float));
}

void dequantize_f16(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const fp16_t*>(src);  // [n]
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(h[i]);
}

void quantize_f16(const float* src, void* dst, int64_t n, const float*) {
  auto* h = static_cast<fp16_t*>(dst);  // [n]
  for (int64_t i = 0; i < n; ++i) h[i] = f32_to_fp16(src[i]);
}

void dequantize_bf16(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const bf16_t*>(src);  // [n]
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(b[i]);
}

void quantize_bf16(const float* src, void* dst, int64_t n, const float*) {
  auto* b = static_cast<bf16_t*>(dst);  // [n]
  for (int64_t i = 0; i < n; ++i) b[i] = f32_to_bf16(src[i]);
}

}  // namespace strata::quant
