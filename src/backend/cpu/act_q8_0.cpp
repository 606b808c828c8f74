// Scalar reference of the 8-bit activation quantizers (Q8_0 and Q8_1), the ground truth of the
// SIMD versions. They follow llama.cpp so that logits stay within the calibration of its
// references: per block of 32, d = amax / 127, q = round(x / d), d stored as fp16. Ties round to
// even (as llama.cpp's SIMD quantizers do), which every ISA level reproduces bit for bit.
#include <cmath>
#include <cstddef>

#include "backend/cpu/block_access.h"
#include "backend/cpu/kernel_decls.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

// Quantizes one block of 32 into q; returns the unrounded scale d and the sum of q.
float quantize_block_q8(const float* x, uint8_t* q, int* sum) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  int s = 0;
  for (int j = 0; j < kQK; ++j) {
    const int v = static_cast<int>(std::nearbyint(x[j] * id));
    q[j] = static_cast<uint8_t>(static_cast<int8_t>(v));
    s += v;
  }
  *sum = s;
  return d;
}

}  // namespace

// x: [n] f32 -> y: [n / 32] BlockQ8_0 at any address.
void quantize_row_q8_0_scalar(const float* x, void* y, int64_t n) {
  auto* out = static_cast<uint8_t*>(y);
  for (int64_t b = 0; b < n / kQK; ++b, out += sizeof(BlockQ8_0)) {
    int sum;
    const float d = quantize_block_q8(x + b * kQK, out + offsetof(BlockQ8_0, qs), &sum);
    store_half(out + offsetof(BlockQ8_0, d), d);
  }
}

// x: [n] f32 -> y: [n / 32] BlockQ8_1 at any address.
void quantize_row_q8_1_scalar(const float* x, void* y, int64_t n) {
  auto* out = static_cast<uint8_t*>(y);
  for (int64_t b = 0; b < n / kQK; ++b, out += sizeof(BlockQ8_1)) {
    int sum;
    const float d = quantize_block_q8(x + b * kQK, out + offsetof(BlockQ8_1, qs), &sum);
    store_half(out + offsetof(BlockQ8_1, d), d);
    store_half(out + offsetof(BlockQ8_1, s), d * static_cast<float>(sum));
  }
}

}  // namespace strata::cpu
