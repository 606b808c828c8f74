// core/memory_bandwidth.h, the roofline the decode benchmarks report against: what it reads and
// how it reports it. The bandwidth itself is a measurement (bench_matmul's BM_ReadBandwidth and
// `strata bench` print it), never a test assertion: a loaded machine reads at any speed.
#include <gtest/gtest.h>

#include <cmath>

#include "core/memory_bandwidth.h"
#include "core/thread_pool.h"

namespace strata {
namespace {

// Each thread reads an equal share rounded up to whole 64-byte lines: ceil(bytes / n / 64) * 64
// is at least bytes / n, so the total covers the request and exceeds it by under 64 per thread.
size_t expected_bytes(size_t bytes, int threads) {
  const size_t per_thread = bytes / static_cast<size_t>(threads);
  return (per_thread + 63) / 64 * 64 * static_cast<size_t>(threads);
}

TEST(MemoryBandwidth, ReadsTheRequestedBytesInWholeLinesPerThread) {
  struct Case {
    int threads;
    size_t bytes;
    int passes;
  };
  for (const Case c : {Case{2, size_t{64} << 20, 2}, Case{1, size_t{8} << 20, 1},
                       Case{3, (size_t{1} << 20) + 1, 3}, Case{3, size_t{5} << 20, 1}}) {
    ThreadPool pool(c.threads);
    const BandwidthResult r = measure_read_bandwidth(pool, c.bytes, c.passes);
    SCOPED_TRACE(testing::Message() << c.threads << " threads, " << c.bytes << " bytes");
    EXPECT_EQ(r.threads, c.threads);
    EXPECT_EQ(r.passes, c.passes);
    EXPECT_EQ(r.bytes, expected_bytes(c.bytes, c.threads));
    EXPECT_EQ(r.bytes % (64 * static_cast<size_t>(c.threads)), 0u);
    EXPECT_GE(r.bytes + 64 * static_cast<size_t>(c.threads), c.bytes);
    // A rate of bytes over a measured, positive time.
    EXPECT_TRUE(std::isfinite(r.bytes_per_second));
    EXPECT_GT(r.bytes_per_second, 0.0);
  }
}

TEST(MemoryBandwidthDeathTest, RejectsTinyBuffersAndZeroPasses) {
  EXPECT_DEATH(
      {
        ThreadPool pool(1);
        measure_read_bandwidth(pool, (size_t{1} << 20) - 1, 1);
      },
      "");
  EXPECT_DEATH(
      {
        ThreadPool pool(1);
        measure_read_bandwidth(pool, size_t{1} << 20, 0);
      },
      "");
}

}  // namespace
}  // namespace strata
