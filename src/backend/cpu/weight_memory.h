// Owned memory for weights the CPU backend copies or repacks at load (the interleaved groups, the
// row copies, W8A8's int8 groups): anonymous memory in transparent huge pages where available.
// Decode and batched decode stream every matrix once per step, and 2 MiB pages save the TLB
// misses of 4 KiB ones (W8A8 GEMV of the gate and down shapes, bench_matmul BM_W8A8Gemv/4 and /6,
// Zen 5, 2 threads, two rounds in a fast window: 67-74 GB/s in 4 KiB pages, 72-76 in huge ones).
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::cpu {

class WeightMemory {
 public:
  WeightMemory() = default;
  // bytes > 0 of uninitialized memory, starting on a 2 MiB boundary. Throws std::bad_alloc.
  explicit WeightMemory(size_t bytes);
  ~WeightMemory();
  WeightMemory(WeightMemory&& other) noexcept;
  WeightMemory& operator=(WeightMemory&& other) noexcept;
  WeightMemory(const WeightMemory&) = delete;
  WeightMemory& operator=(const WeightMemory&) = delete;

  uint8_t* data() const { return data_; }
  size_t bytes() const { return bytes_; }  // as asked (the mapping is rounded up to whole pages)

 private:
  void release();
  uint8_t* data_ = nullptr;
  size_t bytes_ = 0;
  size_t mapped_ = 0;
};

}  // namespace strata::cpu
