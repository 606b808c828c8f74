// Measures how fast the machine reads main memory, the roofline of a memory-bound decode step:
// a token of a model whose weights take B bytes cannot take less than B / bandwidth seconds.
#pragma once

#include <cstddef>

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
// wide loads. The buffer lives in transparent huge pages where the kernel allows (as repacked
// weights do) and is first touched by the thread that later reads it. Returns the best of
// `passes` timed passes after one warm-up pass. bytes must be >= 1 MiB and passes >= 1.
BandwidthResult measure_read_bandwidth(ThreadPool& pool, size_t bytes = size_t{512} << 20, int passes = 5);

}  // namespace strata
