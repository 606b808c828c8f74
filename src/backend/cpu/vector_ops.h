// Element-wise kernels of the newer architectures (GELU and gpt-oss gated activations — SiLU's
// is cpu_ops.h's swiglu —, soft-capping, scaling, the weighted sum of a token's experts), one
// table per ISA level.
//
// The same portable source (vector_ops_impl.h) is compiled three times — baseline x86-64, AVX2
// and AVX-512 — and the compiler vectorizes it for each; the scalar build is the reference the
// others are tested against.
#pragma once

#include <cstdint>

#include "core/cpu_features.h"

namespace strata::cpu {

struct VectorKernels {
  // out = gelu_tanh(gate) * up, gelu_tanh(g) = g/2 * (1 + tanh(sqrt(2/pi) * (g + 0.044715 g^3)))
  void (*glu_gelu_tanh)(const float* gate, const float* up, float* out, int64_t n);
  // gpt-oss: g' = min(g, limit), u' = clamp(u, -limit, limit), out = g' * sigmoid(alpha g') * (u' + 1)
  void (*glu_swiglu_oai)(const float* gate, const float* up, float* out, int64_t n, float alpha, float limit);
  // x = cap * tanh(x / cap)
  void (*softcap)(float* x, int64_t n, float cap);
  // x *= s
  void (*scale)(float* x, int64_t n, float s);
  // out[0:n] = sum_s w[s] * y[s * y_stride + 0:n], slots in order (the same order on every path).
  void (*weighted_sum_row)(const float* y, int64_t y_stride, const float* w, int n_slots, float* out,
                           int64_t n);
};

const VectorKernels& vector_kernels(IsaLevel isa);
inline const VectorKernels& vector_kernels() {
  return vector_kernels(isa_level());
}

// Per-ISA tables (vector_ops.cpp, vector_ops_avx2.cpp, vector_ops_avx512.cpp).
const VectorKernels& vector_kernels_scalar();
const VectorKernels& vector_kernels_avx2();
const VectorKernels& vector_kernels_avx512();

}  // namespace strata::cpu
