// Element-wise kernels of the CPU backend, one table per ISA level (attention: attention.h).
//
// The same portable source (cpu_ops_impl.h) is compiled three times — baseline x86-64,
// AVX2 and AVX-512 — and the compiler vectorizes it for each; the scalar build is the
// reference the others are tested against.
#pragma once

#include <cstdint>

#include "core/cpu_features.h"

namespace strata::cpu {

struct OpKernels {
  // y = x / rms(x) * w over one row of n.
  void (*rms_norm_row)(const float* x, const float* w, float* y, int64_t n, float eps);
  void (*swiglu)(const float* gate, const float* up, float* out, int64_t n);
  void (*add)(float* y, const float* x, int64_t n);
  // Rotates all heads of one token; cos_sin: [n_rot / 2] pairs (cos, sin) for this position.
  void (*rope_row)(float* x, const float* cos_sin, int64_t n_heads, int64_t head_dim, int n_rot, bool neox);
  // x: [n] -> y: [n] fp16.
  void (*f32_to_f16)(const float* x, uint16_t* y, int64_t n);
};

const OpKernels& op_kernels(IsaLevel isa);
inline const OpKernels& op_kernels() {
  return op_kernels(isa_level());
}

// Per-ISA tables (cpu_ops.cpp, cpu_ops_avx2.cpp, cpu_ops_avx512.cpp).
const OpKernels& op_kernels_scalar();
const OpKernels& op_kernels_avx2();
const OpKernels& op_kernels_avx512();

}  // namespace strata::cpu
