#include "backend/cpu/matrix_stack.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/check.h"
#include "core/thread_pool.h"

namespace strata::cpu {
namespace {

// Growable float scratch of the calling thread (matmul keeps its own for the activations).
class FloatScratch {
 public:
  ~FloatScratch() { std::free(data_); }
  float* get(size_t n) {
    if (n > size_) {
      std::free(data_);
      size_ = std::max(n, size_ * 2);
      data_ = static_cast<float*>(std::aligned_alloc(64, (size_ * sizeof(float) + 63) / 64 * 64));
      if (!data_) throw std::bad_alloc();
    }
    return data_;
  }

 private:
  float* data_ = nullptr;
  size_t size_ = 0;
};

thread_local FloatScratch t_gather;

}  // namespace

PackedMatrixStack::PackedMatrixStack(TensorType type, int64_t n_in, int64_t n_out, int64_t n_mats,
                                     const void* data)
    : type_(type), n_in_(n_in), n_out_(n_out) {
  STRATA_CHECK(n_mats > 0 && data != nullptr);
  const size_t bytes = row_bytes(type, n_in) * static_cast<size_t>(n_out);
  mats_.reserve(static_cast<size_t>(n_mats));
  for (int64_t i = 0; i < n_mats; ++i)
    mats_.push_back(
        pack_matrix(type, n_in, n_out, static_cast<const uint8_t*>(data) + bytes * static_cast<size_t>(i)));
}

size_t PackedMatrixStack::owned_bytes() const {
  size_t total = 0;
  for (const auto& m : mats_) total += m->owned_bytes();
  return total;
}

void matmul_stack(ThreadPool& pool, const PackedMatrixStack& w, const int32_t* ids, int64_t n_tokens,
                  int64_t n_slots, const float* x, SlotLayout xl, float* y, SlotLayout yl) {
  const int64_t n_rows = n_tokens * n_slots, n_mats = w.n_mats(), n_in = w.n_in(), n_out = w.n_out();
  if (n_rows == 0) return;
  // Counting sort of the (token, slot) rows by matrix, stable: rows keep token order.
  std::vector<int64_t> start(static_cast<size_t>(n_mats) + 1, 0);
  for (int64_t r = 0; r < n_rows; ++r) {
    STRATA_CHECK(ids[r] >= 0 && ids[r] < n_mats, "matrix index ", ids[r], " out of range [0, ", n_mats, ")");
    ++start[static_cast<size_t>(ids[r]) + 1];
  }
  for (int64_t m = 0; m < n_mats; ++m) start[static_cast<size_t>(m) + 1] += start[static_cast<size_t>(m)];
  std::vector<int64_t> order(static_cast<size_t>(n_rows));
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  for (int64_t r = 0; r < n_rows; ++r) order[static_cast<size_t>(fill[static_cast<size_t>(ids[r])]++)] = r;

  float* xg =
      t_gather.get(static_cast<size_t>(n_rows * (n_in + n_out)));  // [n_rows, n_in] then [n_rows, n_out]
  float* yg = xg + n_rows * n_in;
  for (int64_t i = 0; i < n_rows; ++i) {
    const int64_t r = order[static_cast<size_t>(i)], t = r / n_slots, s = r % n_slots;
    std::memcpy(xg + i * n_in, x + t * xl.token_stride + s * xl.slot_stride,
                static_cast<size_t>(n_in) * sizeof(float));
  }
  for (int64_t m = 0; m < n_mats; ++m) {
    const int64_t b = start[static_cast<size_t>(m)], e = start[static_cast<size_t>(m) + 1];
    if (e > b) matmul(pool, w.matrix(m), xg + b * n_in, yg + b * n_out, e - b);
  }
  for (int64_t i = 0; i < n_rows; ++i) {
    const int64_t r = order[static_cast<size_t>(i)], t = r / n_slots, s = r % n_slots;
    std::memcpy(y + t * yl.token_stride + s * yl.slot_stride, yg + i * n_out,
                static_cast<size_t>(n_out) * sizeof(float));
  }
}

}  // namespace strata::cpu
