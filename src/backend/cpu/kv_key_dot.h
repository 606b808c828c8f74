// Integer dot products of query rows with quantized key rows, for the attention scores over
// block-quantized K (kv_layout.h's TokenRows keys): the query is quantized to the type's
// activation format (Q8_0, or Q8_1 for the types with a min) and each (key, query) pair is an
// integer dot per 32-element group, as llama.cpp's vec_dot. Every such K type is a GGUF block
// layout, so the matmul's kernels of that type (kernels.h) serve.
#pragma once

#include "backend/cpu/kernels.h"
#include "backend/kv_layout.h"

namespace strata::cpu {

// Kernels for keys of a block-quantized type (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL) at `isa`
// (or the best lower level implementing it). gemm_tile's w rows are key rows, a rows query rows.
const TypeKernels& kv_key_kernels(KvType type, IsaLevel isa);

}  // namespace strata::cpu
