// Reference quantization and dequantization of rows, for every storage type.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/tensor_type.h"

namespace strata {

class ThreadPool;

// src: [n] in `type` -> dst: [n] f32. n must be a multiple of the type's block size.
// Works for F32, F16, BF16 and every quantized type (incl. Q8_K).
void dequantize_row(TensorType type, const void* src, float* dst, int64_t n);

// True when quantize_row can produce `type` (every storage type).
bool can_quantize(TensorType type);

// True for the types whose quantization without an importance matrix gives results too poor to
// use (llama.cpp's llama-quantize refuses them: IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M). quantize_row still
// quantizes them without one (with the default weighting); the model-level tools refuse, as llama.cpp does.
bool quantize_requires_imatrix(TensorType type);

// src: [n] f32 -> dst: row_bytes(type, n) bytes. Throws strata::Error for a type that cannot be
// quantized to (can_quantize). Round-to-nearest with a per-block scale search.
// importance: optional [n] per-weight weights for the error the search minimises (imatrix);
// negative or non-finite weights count as 0, a block whose weights are all 0 is fitted unweighted.
// Returns the bytes written.
//
// Non-finite and out-of-range input never crashes and never produces inf/NaN in a quantized type:
// NaN is quantized as 0, +-inf and finite values beyond what the block's fp16 scales can reach are
// clamped to the largest magnitude the block can represent. F16/BF16 keep IEEE semantics (round to
// nearest even; inf and NaN are kept, finite values beyond the F16 range become inf); F32 copies.
// Q8_1 and Q8_K (activation formats) are quantized exactly as llama.cpp does, ignoring importance.
// The 1-3-bit IQ types (IQ3_S, IQ3_XXS, IQ2_*, IQ1_*) weight the error by importance *
// sqrt(sigma2 + x^2), sigma2 = 2 mean(x^2) of the super-block, as llama.cpp does (quant/iq_search.h).
size_t quantize_row(TensorType type, const float* src, void* dst, int64_t n,
                    const float* importance = nullptr);

// src: [n_rows, n_per_row] f32 -> dst: n_rows rows of `type`, rows split across the pool.
// importance: optional [n_per_row], the same weights for every row (an imatrix is per column).
size_t quantize_rows(TensorType type, const float* src, void* dst, int64_t n_rows, int64_t n_per_row,
                     const float* importance = nullptr, ThreadPool* pool = nullptr);

// The type to use for a row of `row_len` elements when `wanted` does not fit (row_len not a
// multiple of its block size), following llama.cpp: K-quants and the 256-blocks IQ types fall back
// to a 32-block type of similar size (IQ4_NL for Q2_K, Q3_K and the IQ types, Q4_0 for TQ1_0 and
// TQ2_0), 32-block types to F16 when nothing fits. Returns `wanted` when it fits.
TensorType fallback_type(TensorType wanted, int64_t row_len);

// llama.cpp's llama_ftype (general.file_type) of a file whose weight matrices are `t` (K-quants:
// the _S variant, which is all-TYPE). Throws strata::Error for a type that is not a file type.
uint32_t llama_file_type(TensorType t);

}  // namespace strata
