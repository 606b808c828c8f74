// Stacks of same-shape weight matrices on the CPU (MoE experts, MLA's per-head projections) and
// the grouped multiplication over them.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/matmul.h"

namespace strata {
class ThreadPool;
}

namespace strata::cpu {

class PackedMatrixStack {
 public:
  // data: n_mats matrices [n_out, n_in] of `type`, back to back (GGUF ne = {n_in, n_out, n_mats});
  // each is packed like a plain matrix (matmul.h), so the stack follows the same layouts.
  PackedMatrixStack(TensorType type, int64_t n_in, int64_t n_out, int64_t n_mats, const void* data);

  TensorType type() const { return type_; }
  int64_t n_mats() const { return static_cast<int64_t>(mats_.size()); }
  int64_t n_in() const { return n_in_; }
  int64_t n_out() const { return n_out_; }
  const PackedMatrix& matrix(int64_t i) const { return *mats_[static_cast<size_t>(i)]; }
  size_t matrix_bytes() const { return mats_.front()->weight_bytes(); }
  size_t owned_bytes() const;

 private:
  TensorType type_;
  int64_t n_in_, n_out_;
  std::vector<std::unique_ptr<PackedMatrix>> mats_;
};

// y(t, s) = w[ids[t, s]] * x(t, s) (backend.h Backend::matmul_stack). The rows of each matrix
// are gathered into one contiguous batch and multiplied in one matmul call, so a matrix chosen by
// many tokens is streamed once, and matrices no token chose are not read at all.
void matmul_stack(ThreadPool& pool, const PackedMatrixStack& w, const int32_t* ids /* [n_tokens, n_slots] */,
                  int64_t n_tokens, int64_t n_slots, const float* x, SlotLayout x_layout, float* y,
                  SlotLayout y_layout);

}  // namespace strata::cpu
