// The CPU matrix multiplication the model uses: y = x * w^T for a weight w [n_out, n_in].
//
// Each call quantizes the activations once (in parallel) to the weight type's activation format,
// then either streams every weight row once, rows split across threads (few tokens: decode is
// memory-bound), or walks cache-sized panels of weights and reuses each register tile across many
// tokens (prefill: compute-bound, int8 dot products). Scratch buffers grow once per calling thread;
// steady-state calls do not allocate.
//
// Weights are used in one of two layouts:
//  - Rows: the rows as stored, multiplied with the TypeKernels of kernels.h (every type, every
//    ISA level): either a zero-copy view of the caller's memory (mmapped GGUF data) or, by
//    default, a copy of it in transparent huge pages, which decode streams ~30% faster than 4 KiB
//    pages (each 4 KiB page is a separate stream for the hardware prefetcher).
//  - Interleaved: an owned copy of the legacy quantized types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0),
//    IQ4_NL and (x86) Q4_K in which 16 rows are interleaved 4 bytes at a time (packed_kernels.h),
//    so one register holds the same 4 quants of 16 rows (AVX-512), 8 rows (AVX2 / AVX-VNNI) or 4
//    rows (NEON) and one activation broadcast feeds all of them. The layout is the same at every
//    ISA level.
// A copy has the source's size (Q4_K's 2.8% more); the source pages are not touched afterwards,
// so the page cache can drop them (the memory cost is the copy, owned_bytes()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "backend/cpu/weight_memory.h"
#include "core/cpu_features.h"
#include "core/tensor_type.h"

namespace strata {
class ThreadPool;
}

namespace strata::cpu {

enum class PackLayout {
  Auto,         // Interleaved where the current ISA level has a kernel for it, else a copy of
                // the rows in huge pages
  Rows,         // the zero-copy row view
  Interleaved,  // the repacked copy (legacy quantized types only; throws otherwise)
};

// A weight [n_out, n_in] ready for the kernels.
class PackedMatrix {
 public:
  PackedMatrix(const PackedMatrix&) = delete;
  PackedMatrix& operator=(const PackedMatrix&) = delete;

  TensorType type() const { return type_; }
  int64_t n_in() const { return n_in_; }
  int64_t n_out() const { return n_out_; }
  bool interleaved() const { return interleaved_; }
  // Bytes of the owned repacked copy (0 for a view): the memory cost of repacking.
  size_t owned_bytes() const { return owned_.bytes(); }
  // Bytes one multiplication reads from the weights.
  size_t weight_bytes() const { return row_bytes(type_, n_in_) * static_cast<size_t>(n_out_); }

  // Rows: row o starts at data() + o * row_stride(). Interleaved: group g of 16 rows starts at
  // data() + g * group_stride() (see packed_kernels.h).
  const uint8_t* data() const { return data_; }
  size_t row_stride() const { return row_stride_; }
  size_t group_stride() const { return group_stride_; }

 private:
  friend std::unique_ptr<PackedMatrix> pack_matrix(TensorType, int64_t, int64_t, const void*, PackLayout);
  PackedMatrix() = default;

  TensorType type_ = TensorType::F32;
  int64_t n_in_ = 0;
  int64_t n_out_ = 0;
  bool interleaved_ = false;
  const uint8_t* data_ = nullptr;
  size_t row_stride_ = 0;
  size_t group_stride_ = 0;
  WeightMemory owned_;  // the interleaved copy or the row copy; empty for a view
};

// data: [n_out] rows of `type`, n_in elements each; it must outlive the result when the layout is
// Rows (a view). Throws strata::Error when n_in is not a whole number of blocks of the type, a dimension
// is not positive, or the type has no CPU kernels.
std::unique_ptr<PackedMatrix> pack_matrix(TensorType type, int64_t n_in, int64_t n_out, const void* data,
                                          PackLayout layout = PackLayout::Auto);

// y[t, o] = sum_i w[o, i] * x[t, i]. Kernels follow the ISA level at the time of the call
// (an Interleaved matrix uses its scalar reference kernel at the scalar level).
void matmul(ThreadPool& pool, const PackedMatrix& w,
            const float* x,  // [n_tokens, n_in]
            float* y,        // [n_tokens, n_out]
            int64_t n_tokens);

// The ISA level whose kernels matmul() runs for `w` at the current level: the interleaved set's
// (packed_kernels.h) or the row kernels' (kernels.h), each the current level or the one it falls
// back to.
IsaLevel matmul_kernel_level(const PackedMatrix& w);
// The kernels a weight of `type` packed now with PackLayout::Auto runs, for logs and `strata
// bench`: "q4_0 interleaved avx2", "q6_K rows avxvnni" (type_name). `type` must have CPU kernels.
std::string matmul_kernel_description(TensorType type);

}  // namespace strata::cpu
