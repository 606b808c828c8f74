// Measures how fast the machine reads main memory, the roofline of a memory-bound decode step:
// a token of a model whose weights take B bytes cannot take less than B / bandwidth seconds.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata {

class ThreadPool;

struct BandwidthResult {
  double bytes_per_second = 0.0;  // best pass
  size_t bytes = 0;               // buffer size read per pass
  int threads = 0;                // threads that read concurrently
  int passes = 0;
};

// Every thread of the pool streams its contiguous share of a buffer of `bytes` (rounded up to a
// multiple of 64 per thread; far larger than the last-level cache by default), summing it with
// the widest loads of the kernels' ISA level (STRATA_ISA lowers it). The buffer lives in
// transparent huge pages where the kernel allows (as repacked weights do) and is first touched
// by the thread that later reads it. Returns the best of `passes` timed passes after one warm-up
// pass. bytes must be >= 1 MiB and passes >= 1.
BandwidthResult measure_read_bandwidth(ThreadPool& pool, size_t bytes = size_t{512} << 20, int passes = 5);

// The same read pass over a buffer that stays allocated, for measurements that alternate with
// the work they judge (a decode token, then a read pass, …): on a host whose bandwidth moves
// from one second to the next, only a reading taken next to the work is its roofline.
class ReadBandwidthProbe {
 public:
  // Allocates and first-touches `bytes` (>= 1 MiB) on the pool's threads, then reads it once.
  ReadBandwidthProbe(ThreadPool& pool, size_t bytes = size_t{512} << 20);
  ~ReadBandwidthProbe();
  ReadBandwidthProbe(const ReadBandwidthProbe&) = delete;
  ReadBandwidthProbe& operator=(const ReadBandwidthProbe&) = delete;

  // One timed pass: bytes per second.
  double pass();
  // The wrapping sum of the buffer's 64-bit words that the last pass computed (thread i's share
  // holds bytes of value i + 1), so a test can check that the wide loads read every word.
  uint64_t last_sum() const;
  size_t bytes() const { return share_ * static_cast<size_t>(threads_); }

 private:
  ThreadPool& pool_;
  int threads_;
  size_t share_;  // bytes per thread
  struct Buffer;
  Buffer* buf_;
};

}  // namespace strata
