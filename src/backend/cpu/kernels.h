// Per-type CPU kernels for matrix multiplication, chosen at run time by ISA level.
//
// A weight row of type T is multiplied with an activation row converted to
// vec_dot_type(T) (Q8_0 / Q8_K / F16 / BF16 / F32), so quantized dot products run on integers.
// Every entry has a scalar reference (IsaLevel::Scalar) that the SIMD versions are tested against.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/cpu_features.h"
#include "core/tensor_type.h"

namespace strata::cpu {

// Largest tile a gemm_tile implementation may be asked for.
constexpr int kMaxTileRows = 8;
constexpr int kMaxTileCols = 8;

struct TypeKernels {
  TensorType vec_dot_type = TensorType::F32;  // activation row format

  // x: [n] f32 -> y: one row of vec_dot_type. n is a multiple of that type's block size.
  void (*from_float)(const float* x, void* y, int64_t n) = nullptr;

  // Dot product of one weight row w (n elements of the weight type) with one activation row a.
  float (*vec_dot)(int64_t n, const void* w, const void* a) = nullptr;

  // Register-blocked tile: out[c * out_stride + r] = vec_dot(n, w + r * w_stride, a + c * a_stride)
  // for r < nr, c < nc (strides in bytes for w/a, in floats for out). nr <= kMaxTileRows,
  // nc <= kMaxTileCols. The result must equal vec_dot's up to float summation order.
  void (*gemm_tile)(int64_t n, int nr, int nc, const void* w, size_t w_stride, const void* a,
                    size_t a_stride, float* out, size_t out_stride) = nullptr;
  int tile_rows = 1;  // the tile shape this ISA prefers (driver uses it for full tiles)
  int tile_cols = 1;
};

// Kernels for a weight type at the given ISA level (falls back to the best lower level that
// implements the type). weight_type must be a storage type (F32..Q6_K, BF16).
const TypeKernels& type_kernels(TensorType weight_type, IsaLevel isa);
inline const TypeKernels& type_kernels(TensorType weight_type) {
  return type_kernels(weight_type, isa_level());
}

}  // namespace strata::cpu
