#include "core/memory_bandwidth.h"

#include <sys/mman.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <new>

#include "core/check.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"

namespace strata {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// Sum of 64-bit words with 8 independent accumulators, so the loop is bound by loads, not by
// the latency of one add chain; the compiler vectorizes it for the baseline ISA.
uint64_t sum_words_portable(const uint64_t* p, size_t n) {
  uint64_t acc[8] = {};
  for (size_t i = 0; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += p[i + static_cast<size_t>(k)];
  uint64_t s = 0;
  for (uint64_t a : acc) s += a;
  return s;
}

#if defined(__x86_64__)
// The widest loads the CPU has: with the baseline's 16-byte loads two threads of this machine
// kind (Sapphire Rapids) read 13-14 GB/s where 64-byte loads read 24-28, and the decode kernels,
// which use the wide loads, read faster than that "roofline".
__attribute__((target("avx512f"))) uint64_t sum_words_avx512(const uint64_t* p, size_t n) {
  __m512i a0 = _mm512_set1_epi64(0), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm512_add_epi64(a0, _mm512_loadu_si512(p + i));
    a1 = _mm512_add_epi64(a1, _mm512_loadu_si512(p + i + 8));
    a2 = _mm512_add_epi64(a2, _mm512_loadu_si512(p + i + 16));
    a3 = _mm512_add_epi64(a3, _mm512_loadu_si512(p + i + 24));
  }
  alignas(64) uint64_t lane[8];
  _mm512_store_si512(lane, _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
  uint64_t s = 0;
  for (uint64_t v : lane) s += v;
  return s + sum_words_portable(p + i, n - i);
}

__attribute__((target("avx2"))) uint64_t sum_words_avx2(const uint64_t* p, size_t n) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a0 = _mm256_add_epi64(a0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    a1 = _mm256_add_epi64(a1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 4)));
    a2 = _mm256_add_epi64(a2, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 8)));
    a3 = _mm256_add_epi64(a3, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 12)));
  }
  alignas(32) uint64_t lane[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lane),
                     _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)));
  return lane[0] + lane[1] + lane[2] + lane[3] + sum_words_portable(p + i, n - i);
}
#endif

using SumWords = uint64_t (*)(const uint64_t*, size_t);

// The loads of the kernels' level (STRATA_ISA forces it lower): the roofline of those kernels,
// and how a test reaches each loop on one CPU.
SumWords widest_sum_words() {
#if defined(__x86_64__)
  const IsaLevel level = isa_level();
  if (isa_includes(level, IsaLevel::Avx512)) return sum_words_avx512;
  if (isa_includes(level, IsaLevel::Avx2)) return sum_words_avx2;
#endif
  return sum_words_portable;
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

struct ReadBandwidthProbe::Buffer {
  MappedBuffer mem;
  std::atomic<uint64_t> sum{0};  // the last pass's, published, so the reads cannot be elided
  explicit Buffer(size_t bytes) : mem(bytes) {}
};

ReadBandwidthProbe::ReadBandwidthProbe(ThreadPool& pool, size_t bytes)
    : pool_(pool), threads_(pool.size()), share_((bytes / static_cast<size_t>(pool.size()) + 63) / 64 * 64) {
  STRATA_CHECK(bytes >= (size_t{1} << 20));
  buf_ = new Buffer(share_ * static_cast<size_t>(threads_));
  pool_.run([&](int ith, int) {
    std::memset(buf_->mem.data() + share_ * static_cast<size_t>(ith), ith + 1, share_);
  });
  pass();  // warm-up: TLB, page tables, frequency
}

ReadBandwidthProbe::~ReadBandwidthProbe() {
  delete buf_;
}

uint64_t ReadBandwidthProbe::last_sum() const {
  return buf_->sum.load();
}

double ReadBandwidthProbe::pass() {
  const SumWords sum_words = widest_sum_words();
  buf_->sum.store(0);
  const auto t0 = std::chrono::steady_clock::now();
  pool_.run([&](int ith, int) {
    const auto* p = reinterpret_cast<const uint64_t*>(buf_->mem.data() + share_ * static_cast<size_t>(ith));
    buf_->sum.fetch_add(sum_words(p, share_ / 8), std::memory_order_relaxed);
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<double>(bytes()) / s;
}

BandwidthResult measure_read_bandwidth(ThreadPool& pool, size_t bytes, int passes) {
  STRATA_CHECK(bytes >= (size_t{1} << 20) && passes >= 1);
  ReadBandwidthProbe probe(pool, bytes);
  BandwidthResult r;
  r.bytes = probe.bytes();
  r.threads = pool.size();
  r.passes = passes;
  for (int i = 0; i < passes; ++i) r.bytes_per_second = std::max(r.bytes_per_second, probe.pass());
  return r;
}

}  // namespace strata
