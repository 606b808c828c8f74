#include "core/memory_bandwidth.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <new>

#include "core/check.h"
#include "core/thread_pool.h"

namespace strata {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// Sum of 64-bit words with 8 independent accumulators, so the loop is bound by loads, not by
// the latency of one add chain; the compiler vectorizes it.
uint64_t sum_words(const uint64_t* p, size_t n) {
  uint64_t acc[8] = {};
  for (size_t i = 0; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += p[i + static_cast<size_t>(k)];
  uint64_t s = 0;
  for (uint64_t a : acc) s += a;
  return s;
}

class MappedBuffer {
 public:
  explicit MappedBuffer(size_t bytes) : size_((bytes + kHugePage - 1) / kHugePage * kHugePage + kHugePage) {
    base_ = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base_ == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t b = reinterpret_cast<uintptr_t>(base_);
    data_ = reinterpret_cast<uint8_t*>((b + kHugePage - 1) / kHugePage * kHugePage);
    madvise(data_, size_ - kHugePage, MADV_HUGEPAGE);
  }
  ~MappedBuffer() { munmap(base_, size_); }
  uint8_t* data() { return data_; }

 private:
  size_t size_;
  void* base_;
  uint8_t* data_;
};

}  // namespace

BandwidthResult measure_read_bandwidth(ThreadPool& pool, size_t bytes, int passes) {
  STRATA_CHECK(bytes >= (size_t{1} << 20) && passes >= 1);
  const int nth = pool.size();
  const size_t share = (bytes / static_cast<size_t>(nth) + 63) / 64 * 64;  // bytes per thread
  MappedBuffer buf(share * static_cast<size_t>(nth));
  std::atomic<uint64_t> sink{0};  // the sums are published, so the reads cannot be elided
  auto read_pass = [&](int ith, int) {
    const auto* p = reinterpret_cast<const uint64_t*>(buf.data() + share * static_cast<size_t>(ith));
    sink.fetch_add(sum_words(p, share / 8), std::memory_order_relaxed);
  };
  pool.run([&](int ith, int) { std::memset(buf.data() + share * static_cast<size_t>(ith), ith + 1, share); });
  pool.run(read_pass);  // warm-up: TLB, page tables, frequency
  BandwidthResult r;
  r.bytes = share * static_cast<size_t>(nth);
  r.threads = nth;
  r.passes = passes;
  for (int i = 0; i < passes; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.run(read_pass);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.bytes_per_second = std::max(r.bytes_per_second, static_cast<double>(r.bytes) / s);
  }
  return r;
}

}  // namespace strata
