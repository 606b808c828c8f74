// core/memory_bandwidth.h, the roofline the decode benchmarks report against: what it reads and
// how it reports it. The bandwidth itself is a measurement (bench_matmul's BM_ReadBandwidth and
// `strata bench` print it), never a test assertion: a loaded machine reads at any speed.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "core/cpu_features.h"
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

// The pass reads every word of every thread's share: its sum equals the one the fill pattern
// gives (thread i's bytes are i + 1), including shares whose word count is no multiple of the
// wide loop's 32 (the tail goes through the portable loop), at every ISA level (STRATA_ISA).
TEST(MemoryBandwidth, ProbePassSumsEveryWordOfTheBuffer) {
  const IsaLevel saved = isa_level();
  for (IsaLevel isa : supported_isa_levels()) {
    set_isa_level(isa);
    for (const auto& [threads, bytes] : std::vector<std::pair<int, size_t>>{
             {1, size_t{1} << 20}, {3, (size_t{1} << 20) + 1}, {2, size_t{3} << 20}}) {
      ThreadPool pool(threads);
      ReadBandwidthProbe probe(pool, bytes);
      const size_t words = probe.bytes() / static_cast<size_t>(threads) / 8;
      uint64_t want = 0;
      for (int i = 0; i < threads; ++i)
        want += words * (uint64_t{0x0101010101010101} * static_cast<uint64_t>(i + 1));
      EXPECT_GT(probe.pass(), 0.0);
      EXPECT_EQ(probe.last_sum(), want)
          << isa_name(isa) << ", " << threads << " threads, " << bytes << " bytes";
    }
  }
  set_isa_level(saved);
}

}  // namespace
}  // namespace strata
