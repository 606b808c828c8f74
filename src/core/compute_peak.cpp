#include "core/compute_peak.h"

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "core/check.h"
#include "core/compute_peak_kernels.h"
#include "core/thread_pool.h"

namespace strata {
namespace {

// One kind of peak loop: the function and the multiply-adds of one of its instructions.
struct Loop {
  double (*run)(int64_t iters) = nullptr;  // nullptr: none at this level
  int macs = 0;
  const char* what = "";
};

// Wrappers so int and float loops share one signature; the result only keeps the work alive.
template <auto F>
double as_double(int64_t iters) {
  return static_cast<double>(F(iters));
}

Loop int8_loop(IsaLevel level) {
  switch (level) {
#if defined(__x86_64__)
    case IsaLevel::Avx2:
      return {as_double<peak::int8_chains_avx2>, peak::kMacsYmmInt8, "vpmaddubsw ymm"};
    case IsaLevel::AvxVnni:
      return {as_double<peak::int8_chains_avxvnni>, peak::kMacsYmmInt8, "vpdpbusd ymm"};
    case IsaLevel::Amx:
      return {as_double<peak::int8_chains_amx>, peak::kMacsAmxInt8, "tdpbusd"};
    case IsaLevel::Avx512:
      return {as_double<peak::int8_chains_avx512>, peak::kMacsZmmInt8, "vpdpbusd zmm"};
#elif defined(__aarch64__)
    case IsaLevel::NeonDotprod:
    case IsaLevel::NeonI8mm:
      return {as_double<peak::int8_chains_dotprod>, peak::kMacsNeonInt8, "sdot v.4s"};
#endif
    default:
      return {};
  }
}

Loop f32_loop(IsaLevel level) {
  switch (level) {
#if defined(__x86_64__)
    case IsaLevel::Avx2:
    case IsaLevel::AvxVnni:
      return {as_double<peak::f32_chains_avx2>, peak::kMacsYmmF32, "vfmadd ymm"};
    case IsaLevel::Amx:  // AMX has no f32 tile product (AMX-BF16 aside): the zmm FMA peak
    case IsaLevel::Avx512:
      return {as_double<peak::f32_chains_avx512>, peak::kMacsZmmF32, "vfmadd zmm"};
#elif defined(__aarch64__)
    case IsaLevel::Neon:
    case IsaLevel::NeonDotprod:
    case IsaLevel::NeonI8mm:
      return {as_double<peak::f32_chains_neon>, peak::kMacsNeonF32, "fmla v.4s"};
#endif
    default:
      return {};
  }
}

double seconds_of(const auto& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Ops per second of `loop` on all pool threads: iterations sized for ~20 ms per pass on one
// thread (measured on the caller), best of `passes` after a warm-up pass.
double measure(ThreadPool& pool, const Loop& loop, int passes) {
  if (loop.run == nullptr) return 0.0;
  constexpr int64_t kProbe = int64_t{1} << 16;
  const double probe = std::max(seconds_of([&] { loop.run(kProbe); }), 1e-6);
  const int64_t iters =
      std::clamp<int64_t>(static_cast<int64_t>(kProbe * 0.02 / probe), kProbe, int64_t{1} << 28);
  double best = 0.0;
  for (int p = 0; p <= passes; ++p) {
    const double s = seconds_of([&] { pool.run([&](int, int) { loop.run(iters); }); });
    const double ops = 2.0 * loop.macs * peak::kPeakChains * static_cast<double>(iters) * pool.size();
    if (p > 0) best = std::max(best, ops / s);  // pass 0 warms up
  }
  return best;
}

}  // namespace

ComputePeak measure_compute_peak(ThreadPool& pool, IsaLevel level, int passes) {
  STRATA_CHECK(passes >= 1);
  ComputePeak r;
  r.level = clamp_isa(level);
  r.threads = pool.size();
  const Loop i8 = int8_loop(r.level), f32 = f32_loop(r.level);
  r.int8_ops_per_second = measure(pool, i8, passes);
  r.f32_flops = measure(pool, f32, passes);
  r.int8_what = i8.what;
  r.f32_what = f32.what;
  return r;
}

}  // namespace strata
