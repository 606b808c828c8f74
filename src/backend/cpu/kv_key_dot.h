// Integer dot products of query rows with quantized key rows, for the attention scores over
// block-quantized K (kv_layout.h's TokenRows keys): the query is quantized to the type's
// activation format (Q8_0, or Q8_1 for the types with a min) and each (key, query) pair is an
// integer dot per 32-element group, as llama.cpp's vec_dot. The GGUF types reuse the matmul's
// kernels (kernels.h); IQ4_NL's are here (kv_iq4_nl*.cpp), defined locally for the KV cache.
#pragma once

#include "backend/cpu/kernels.h"
#include "backend/kv_layout.h"

namespace strata::cpu {

// Kernels for keys of a block-quantized type (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL) at `isa`
// (or the best lower level implementing it). gemm_tile's w rows are key rows, a rows query rows.
const TypeKernels& kv_key_kernels(KvType type, IsaLevel isa);

// IQ4_NL keys against Q8_0 queries (kv_iq4_nl.cpp, kv_iq4_nl_avx2.cpp, kv_iq4_nl_avx512.cpp).
const TypeKernels& kv_iq4_nl_kernels_scalar();
const TypeKernels& kv_iq4_nl_kernels_avx2();
const TypeKernels& kv_iq4_nl_kernels_avx512();

}  // namespace strata::cpu
