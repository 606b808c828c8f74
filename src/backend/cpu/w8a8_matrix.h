// W8A8: a weight matrix quantized to int8 with one scale per output channel, multiplied with
// activations quantized to int8 either per token at run time (dynamic) or with one fixed
// per-tensor scale from calibration (static). A Strata-only in-memory layout (w8a8_kernels.h)
// made at load from float or Q8_0 weights; it is never written to a file.
//
// Weights: d_o = max_k |W[o, k]| / 127, q = round(W / d_o) (symmetric, in [-127, 127]).
// Activations: dynamic d_t = max_k |x[t, k]| / 127; static d = absmax / 127 for the calibrated
// absmax of the tensor's input, values beyond it clamped to +-127.
// y[t, o] = d_t * d_o * sum_k q_w[o, k] * q_x[t, k].
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cpu/weight_memory.h"

namespace strata {
class ThreadPool;
}

namespace strata::cpu {

struct W8A8ActQuant {
  // 0: dynamic per-token scales; > 0: static, the calibrated max |x| of the input.
  float static_absmax = 0.0f;
};

class W8A8Matrix {
 public:
  // w: [n_out, n_in] f32 rows, row o at w + o * n_in. Throws strata::Error for a non-positive
  // dimension, n_in > kW8A8MaxK, a non-finite weight or a negative/non-finite static absmax.
  static std::unique_ptr<W8A8Matrix> pack(ThreadPool* pool, const float* w, int64_t n_in, int64_t n_out,
                                          W8A8ActQuant act);
  W8A8Matrix(const W8A8Matrix&) = delete;
  W8A8Matrix& operator=(const W8A8Matrix&) = delete;

  int64_t n_in() const { return n_in_; }
  int64_t n_out() const { return n_out_; }
  int64_t kp() const { return kp_; }  // n_in padded to a multiple of 4
  int64_t n_groups() const { return n_groups_; }
  const W8A8ActQuant& act() const { return act_; }
  // Group g of 16 rows ([kp / 4, 16, 4] biased u8) and its [16] scales.
  const uint8_t* group(int64_t g) const { return data_.data() + static_cast<size_t>(g) * group_bytes(); }
  const float* group_scales(int64_t g) const { return scales_.data() + g * 16; }
  size_t group_bytes() const { return static_cast<size_t>(kp_) * 16; }
  // Bytes one multiplication reads (quants and scales).
  size_t weight_bytes() const { return group_bytes() * static_cast<size_t>(n_groups_) + scales_.size() * 4; }

 private:
  W8A8Matrix() = default;
  int64_t n_in_ = 0, n_out_ = 0, kp_ = 0, n_groups_ = 0;
  W8A8ActQuant act_;
  WeightMemory data_;          // [n_groups, kp / 4, 16, 4]
  std::vector<float> scales_;  // [n_groups * 16]
};

// y[t, o] = sum_i w[o, i] * x[t, i] with the kernels of the current ISA level (activation
// quantization included: w8a8_kernels.h).
void w8a8_matmul(ThreadPool& pool, const W8A8Matrix& w,
                 const float* x,  // [n_tokens, n_in]
                 float* y,        // [n_tokens, n_out]
                 int64_t n_tokens);

}  // namespace strata::cpu
