// Per-type CPU kernels for matrix multiplication, chosen at run time by ISA level.
//
// A weight row of type T is multiplied with an activation row converted to
// vec_dot_type(T) (Q8_0 / Q8_1 / Q8_K / F16 / BF16 / F32), so quantized dot products run on
// integers. Every entry has a scalar reference (IsaLevel::Scalar) that the SIMD versions are
// tested against.
//
// How an implementation registers (the contract between the kernel files and the registry):
//  1. Each (weight type, ISA level) pair that has an implementation defines one getter
//         const TypeKernels& <type>_kernels_<isa>();
//     with <type> the lower-case GGUF type name (f32, f16, bf16, q4_0, ..., q4_k, q6_k) and <isa>
//     one of scalar / avx2 / avxvnni / avx512 (x86-64) / neon / dotprod / i8mm (aarch64), e.g.
//     `const TypeKernels& q4_k_kernels_avx2();`, in the file dot_<type>.cpp or
//     dot_<type>_<isa>.cpp (namespace strata::cpu; the ISA files of the other architecture are
//     not compiled, see cmake/StrataLayer.cmake).
//     The getter must only return a constant-initialised object (`static constexpr TypeKernels`):
//     the registry never calls a getter of an ISA level the CPU lacks, but the getter's own code
//     is compiled for that ISA.
//  2. All getters are declared in kernel_decls.h.
//  3. kernel_registry.cpp lists, per weight type, the getters that exist (nullptr for a missing
//     level). type_kernels() walks down the requested level's chain (core/cpu_features.h) to the
//     first listed level the CPU supports, so a type with only a scalar and an AVX2
//     implementation runs its AVX2 kernels at the avxvnni and avx512 levels.
//  4. The scalar getter is mandatory: it is the ground truth of the tests.
// The activation quantizers (from_float) shared by several types are declared in kernel_decls.h
// as quantize_row_<type>_<isa>() so other kernel files can reuse them.
//
// BATCH INVARIANCE (required by the serving engine): at a given ISA
// level, y[t, o] of matmul() must be BITWISE identical whatever n_tokens is, wherever token t
// sits in the batch, whichever tile shape / GEMV-or-GEMM path / repacked layout computes it, and
// however many threads run. The engine's determinism guarantee (a greedy request gives the same
// tokens alone or in a batch of 32, with any prefill chunk size, with prefix caching on or off)
// rests on it. So every path must accumulate each output in the same order with the same
// operations (e.g. integer dot per block, then the same float FMA sequence across blocks with the
// same lane split and the same final horizontal sum). tests/backend/test_matmul_invariance.cpp
// checks it.
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
  // nc <= kMaxTileCols. Pointers need no particular alignment.
  // Batch invariance: each output must come from the same sequence of float operations whatever
  // nr, nc and its place in the tile (one accumulator per output, no shape-dependent unrolling),
  // so a token's result never depends on which other tokens share its batch; the engine's
  // determinism rests on it. Equal to vec_dot up to float summation order.
  void (*gemm_tile)(int64_t n, int nr, int nc, const void* w, size_t w_stride, const void* a, size_t a_stride,
                    float* out, size_t out_stride) = nullptr;
  int tile_rows = 1;  // the tile shape this ISA prefers (driver uses it for full tiles)
  int tile_cols = 1;

  // Optional, for types whose blocks are costly to decode (IQ, ternary): gemm_tile's result for
  // nr <= kMaxTileRows rows and any number nc of tokens, each row decoded once for all of them.
  // The same outputs, bitwise, as gemm_tile's.
  void (*gemm_panel)(int64_t n, int nr, int nc, const void* w, size_t w_stride, const void* a,
                     size_t a_stride, float* out, size_t out_stride) = nullptr;
};

// Kernels for a weight type at the given ISA level (falls back to the best lower level that
// implements the type; the level is first clamped to what the CPU supports). weight_type must
// be a storage type with a registered scalar implementation (checked).
const TypeKernels& type_kernels(TensorType weight_type, IsaLevel isa);
inline const TypeKernels& type_kernels(TensorType weight_type) {
  return type_kernels(weight_type, isa_level());
}
// True when the registry has at least a scalar implementation for the type.
bool has_type_kernels(TensorType weight_type);
// The ISA level type_kernels(weight_type, isa) actually resolves to.
IsaLevel resolved_isa(TensorType weight_type, IsaLevel isa);

}  // namespace strata::cpu
