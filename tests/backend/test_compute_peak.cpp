// core/compute_peak.h, the int8 / f32 peaks the benchmarks report GEMM and GEMV against: each
// level's loop computes what its instruction's definition says (so the work it counts is done),
// and the measurement reports the level it ran and plausible rates.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/cpu/w8a8_kernels.h"
#include "core/compute_peak.h"
#include "core/compute_peak_kernels.h"
#include "core/thread_pool.h"

namespace strata {
namespace {

constexpr int64_t kIters = 10;

// Chain i starts at i and adds `per_iter` each round; the loops return lanes 0 + last of the sum.
int64_t int_chain_result(int64_t per_iter) {
  int64_t lane = 0;
  for (int i = 0; i < peak::kPeakChains; ++i) lane += i + kIters * per_iter;
  return 2 * lane;
}

// Chain i: x <- x * 0.999 + 1e-6 from x = i; the loops return lane 0 of the sum over chains.
double f32_chain_result() {
  double s = 0.0;
  for (int i = 0; i < peak::kPeakChains; ++i) {
    double x = i;
    for (int64_t it = 0; it < kIters; ++it) x = x * static_cast<double>(0.999f) + static_cast<double>(1e-6f);
    s += x;
  }
  return s;
}

TEST(ComputePeak, LoopsComputeTheirInstructionsDefinition) {
  const double f32_want = f32_chain_result();
#if defined(__x86_64__)
  if (isa_supported(IsaLevel::Avx2)) {
    // vpmaddubsw: 3 * 5 + 3 * 5 = 30 per int16 lane and round.
    EXPECT_EQ(peak::int8_chains_avx2(kIters), int_chain_result(30));
    EXPECT_NEAR(peak::f32_chains_avx2(kIters), f32_want, 1e-4);
  }
  // vpdpbusd: 4 * 3 * 5 = 60 per int32 lane and round.
  if (isa_supported(IsaLevel::AvxVnni)) {
    EXPECT_EQ(peak::int8_chains_avxvnni(kIters), int_chain_result(60));
  }
  if (isa_supported(IsaLevel::Avx512)) {
    // The zmm loop returns the sum of all 16 lanes.
    EXPECT_EQ(peak::int8_chains_avx512(kIters), 8 * int_chain_result(60));
    EXPECT_NEAR(peak::f32_chains_avx512(kIters), 16 * f32_want, 1e-3);
  }
  if (isa_supported(IsaLevel::Amx)) {
    // tdpbusd on all-3 A and all-5 B tiles: each C element gains 64 * 3 * 5 per product, two
    // products per round on each of the kAmxChains tiles; the loop sums element [0][0] of each.
    EXPECT_EQ(peak::int8_chains_amx(kIters), int64_t{peak::kAmxChains} * 2 * 64 * 15 * kIters);
  }
#elif defined(__aarch64__)
  if (isa_supported(IsaLevel::Neon)) {
    EXPECT_NEAR(peak::f32_chains_neon(kIters), 4 * f32_want, 1e-3);
  }
  // sdot: the sum of all 4 lanes.
  if (isa_supported(IsaLevel::NeonDotprod)) {
    EXPECT_EQ(peak::int8_chains_dotprod(kIters), 2 * int_chain_result(60));
  }
#endif
}

TEST(ComputePeak, ReportsEveryLevelItRan) {
  ThreadPool pool(2);
  for (IsaLevel level : supported_isa_levels()) {
    const ComputePeak p = measure_compute_peak(pool, level, 1);
    EXPECT_EQ(p.level, level);
    EXPECT_EQ(p.threads, 2);
    const bool simd = level != IsaLevel::Scalar;
    // Every SIMD level has an f32 loop; every one but plain NEON an int8 loop.
    EXPECT_EQ(p.f32_flops > 0.0, simd) << isa_name(level);
    EXPECT_EQ(p.int8_ops_per_second > 0.0, simd && level != IsaLevel::Neon) << isa_name(level);
    EXPECT_EQ(p.int8_what.empty(), p.int8_ops_per_second == 0.0) << isa_name(level);
    EXPECT_EQ(p.f32_what.empty(), p.f32_flops == 0.0) << isa_name(level);
    // A rate is finite and below 100000 G multiply-adds per second on 2 threads; no lower bound,
    // which would be a speed requirement (qemu-user on a loaded machine measured 5e7 here).
    for (double r : {p.f32_flops, p.int8_ops_per_second})
      if (r > 0.0) {
        EXPECT_TRUE(std::isfinite(r));
        EXPECT_LT(r, 1e14);
      }
  }
  // A level the CPU lacks is measured at the level it falls back to.
  EXPECT_EQ(measure_compute_peak(pool, IsaLevel::Avx512, 1).level, clamp_isa(IsaLevel::Avx512));
}

#if defined(__x86_64__)
TEST(ComputePeak, AmxProbeLeavesTheKernelsTileConfigurationConsistent) {
  // The probe loads its own tile configuration through amx_configure; an AMX kernel that ran
  // before it on this thread must reload its own afterwards (one per-thread record), or it would
  // multiply with the probe's tile shapes.
  if (!isa_supported(IsaLevel::Amx)) GTEST_SKIP() << "no AMX on this CPU";
  const int64_t kp = 132;
  const int nc = 5;
  std::vector<uint8_t> w(static_cast<size_t>(kp) * 16);
  std::vector<int8_t> a(static_cast<size_t>(kp) * nc);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<uint8_t>(i * 37 + 11);
  std::vector<int32_t> sum(nc, 0);
  for (int c = 0; c < nc; ++c)
    for (int64_t k = 0; k < kp; ++k) {
      const int v = static_cast<int>((c * 131 + k * 17) % 255) - 127;
      a[static_cast<size_t>(c * kp + k)] = static_cast<int8_t>(v);
      sum[static_cast<size_t>(c)] += v;
    }
  std::vector<float> w_scale(16, 0.01f), scale(nc, 0.02f);
  const cpu::W8A8ActTile tile{a.data(), static_cast<size_t>(kp), sum.data(), scale.data()};
  std::vector<float> want(16 * nc), got(16 * nc);
  cpu::w8a8_gemm_scalar(w.data(), kp, w_scale.data(), tile, nc, want.data(), 16, 16);
  cpu::w8a8_gemm_amx(w.data(), kp, w_scale.data(), tile, nc, got.data(), 16, 16);
  ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
  peak::int8_chains_amx(kIters);
  std::fill(got.begin(), got.end(), 0.0f);
  cpu::w8a8_gemm_amx(w.data(), kp, w_scale.data(), tile, nc, got.data(), 16, 16);
  EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
}
#endif

}  // namespace
}  // namespace strata
