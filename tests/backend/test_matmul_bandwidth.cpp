// core/memory_bandwidth.h, the roofline the decode benchmarks report against: the shape of its
// result and a plausible value.
#include <gtest/gtest.h>

#include <cmath>

#include "core/memory_bandwidth.h"
#include "core/thread_pool.h"

namespace strata {
namespace {

TEST(MemoryBandwidth, ReportsWhatItMeasured) {
  ThreadPool pool(2);
  const BandwidthResult r = measure_read_bandwidth(pool, size_t{64} << 20, 2);
  EXPECT_EQ(r.threads, 2);
  EXPECT_EQ(r.passes, 2);
  EXPECT_GE(r.bytes, size_t{64} << 20);
  EXPECT_LT(r.bytes, (size_t{64} << 20) + 128);
  // Any machine this runs on reads between 100 MB/s and 10 TB/s.
  EXPECT_TRUE(std::isfinite(r.bytes_per_second));
  EXPECT_GT(r.bytes_per_second, 1e8);
  EXPECT_LT(r.bytes_per_second, 1e13);
}

TEST(MemoryBandwidth, SingleThreadPool) {
  ThreadPool pool(1);
  const BandwidthResult r = measure_read_bandwidth(pool, size_t{8} << 20, 1);
  EXPECT_EQ(r.threads, 1);
  EXPECT_EQ(r.bytes, size_t{8} << 20);
  EXPECT_GT(r.bytes_per_second, 1e8);
}

}  // namespace
}  // namespace strata
