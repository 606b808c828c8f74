// Portable source of the element-wise kernels of vector_ops.h, compiled once per ISA level.
// Everything here has internal linkage; the loops are branch-free element by element so the
// compiler vectorizes them with the flags of the including file.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backend/cpu/fast_math.h"
#include "backend/cpu/vector_ops.h"

namespace strata::cpu {
namespace {

void vk_glu_gelu_tanh(const float* gate, const float* up, float* out, int64_t n) {
  constexpr float kSqrt2OverPi = 0.797884560802865355f;
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    // (1 + tanh(z)) / 2 == sigmoid(2z): no cancellation where tanh is near -1.
    const float inner = kSqrt2OverPi * g * (1.0f + 0.044715f * g * g);
    out[i] = g * fast_sigmoid(2.0f * inner) * up[i];
  }
}

void vk_glu_swiglu_oai(const float* gate, const float* up, float* out, int64_t n, float alpha, float limit) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = std::min(gate[i], limit);
    const float u = std::min(limit, std::max(-limit, up[i]));
    out[i] = g * fast_sigmoid(alpha * g) * (u + 1.0f);
  }
}

void vk_softcap(float* x, int64_t n, float cap) {
  const float inv = 1.0f / cap;
  for (int64_t i = 0; i < n; ++i) x[i] = cap * fast_tanh(x[i] * inv);
}

void vk_scale(float* x, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

void vk_weighted_sum_row(const float* y, int64_t y_stride, const float* w, int n_slots, float* out,
                         int64_t n) {
  const float w0 = n_slots > 0 ? w[0] : 0.0f;
  for (int64_t i = 0; i < n; ++i) out[i] = n_slots > 0 ? w0 * y[i] : 0.0f;
  for (int s = 1; s < n_slots; ++s) {
    const float ws = w[s];
    const float* ys = y + s * y_stride;
    for (int64_t i = 0; i < n; ++i) out[i] += ws * ys[i];
  }
}

constexpr VectorKernels kVectorKernels = {
    vk_glu_gelu_tanh, vk_glu_swiglu_oai, vk_softcap, vk_scale, vk_weighted_sum_row,
};

}  // namespace
}  // namespace strata::cpu
