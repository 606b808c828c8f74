// The ISA level chains (core/cpu_features.h): fallback order, clamping to what the CPU has,
// names, and the line it prints about which levels the per-level tests covered.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/packed_kernels.h"
#include "core/cpu_features.h"
#include "test_kernels_util.h"

namespace strata::cpu {
namespace {

TEST(IsaLevels, ChainsFallBackInOrder) {
  EXPECT_EQ(isa_fallback(IsaLevel::Avx512), IsaLevel::AvxVnni);
  EXPECT_EQ(isa_fallback(IsaLevel::AvxVnni), IsaLevel::Avx2);
  EXPECT_EQ(isa_fallback(IsaLevel::Avx2), IsaLevel::Scalar);
  EXPECT_EQ(isa_fallback(IsaLevel::NeonI8mm), IsaLevel::NeonDotprod);
  EXPECT_EQ(isa_fallback(IsaLevel::NeonDotprod), IsaLevel::Neon);
  EXPECT_EQ(isa_fallback(IsaLevel::Neon), IsaLevel::Scalar);
  EXPECT_EQ(isa_fallback(IsaLevel::Scalar), IsaLevel::Scalar);
  EXPECT_TRUE(isa_includes(IsaLevel::Avx512, IsaLevel::Avx2));
  EXPECT_TRUE(isa_includes(IsaLevel::Avx512, IsaLevel::AvxVnni));
  EXPECT_TRUE(isa_includes(IsaLevel::NeonI8mm, IsaLevel::Scalar));
  EXPECT_FALSE(isa_includes(IsaLevel::Avx2, IsaLevel::AvxVnni));
  EXPECT_FALSE(isa_includes(IsaLevel::NeonI8mm, IsaLevel::Avx2));
  EXPECT_FALSE(isa_includes(IsaLevel::Avx512, IsaLevel::Neon));
}

TEST(IsaLevels, NamesRoundTrip) {
  for (int i = 0; i < kIsaLevelCount; ++i) {
    const auto l = static_cast<IsaLevel>(i);
    ASSERT_EQ(isa_from_name(isa_name(l)), l) << i;
  }
  EXPECT_FALSE(isa_from_name("avx3").has_value());
  EXPECT_FALSE(isa_from_name("").has_value());
}

// Clamping never returns a level the CPU lacks or one above the request.
TEST(IsaLevels, ClampStaysOnTheChainAndOnTheCpu) {
  for (int i = 0; i < kIsaLevelCount; ++i) {
    const auto want = static_cast<IsaLevel>(i);
    const IsaLevel got = clamp_isa(want);
    EXPECT_TRUE(isa_supported(got)) << isa_name(want);
    EXPECT_TRUE(isa_includes(want, got)) << isa_name(want);
    if (isa_supported(want)) {
      EXPECT_EQ(got, want);
    }
  }
  EXPECT_TRUE(isa_supported(IsaLevel::Scalar));
  EXPECT_TRUE(isa_supported(max_supported_isa()));
  const auto levels = supported_isa_levels();
  ASSERT_FALSE(levels.empty());
  EXPECT_EQ(levels.front(), IsaLevel::Scalar);
  // The other architecture's levels are never supported.
#if defined(__aarch64__)
  EXPECT_FALSE(isa_supported(IsaLevel::Avx2));
#else
  EXPECT_FALSE(isa_supported(IsaLevel::Neon));
#endif
}

TEST(IsaLevels, SetLevelClamps) {
  const IsaLevel saved = isa_level();
  for (int i = 0; i < kIsaLevelCount; ++i) {
    const auto want = static_cast<IsaLevel>(i);
    set_isa_level(want);
    EXPECT_EQ(isa_level(), clamp_isa(want));
  }
  set_isa_level(saved);
}

// What `strata bench` and bench_matmul report as the kernel set that ran: at every level, Auto
// interleaves Q4_0 (and, on x86, Q4_K, Q5_K, IQ4_XS and Q6_K) exactly where a SIMD set exists and the
// reported level is the one whose kernels matmul() dispatches to; Q3_K (no interleaved layout) runs its row
// kernels.
TEST(IsaLevels, MatmulReportsTheKernelsItRuns) {
  const IsaLevel saved = isa_level();
  const std::vector<TensorType> interleaved_types{TensorType::Q4_0, TensorType::Q4_K, TensorType::IQ4_XS,
                                                  TensorType::Q5_K, TensorType::Q6_K, TensorType::Q3_K,
                                                  TensorType::Q2_K};
  // A type with no interleaved layout at any level.
  constexpr TensorType kRowsOnly = TensorType::IQ3_S;
  std::vector<uint8_t> rows_only(row_bytes(kRowsOnly, 256) * 16);
  for (IsaLevel isa : supported_isa_levels()) {
    set_isa_level(isa);
    for (TensorType t : interleaved_types) {
      std::vector<uint8_t> data(row_bytes(t, 256) * 16);
      const auto w = pack_matrix(t, 256, 16, data.data());
      EXPECT_EQ(w->interleaved(), isa != IsaLevel::Scalar) << isa_name(isa);
      const IsaLevel want = w->interleaved() ? packed_kernels(isa).level : resolved_isa(t, isa);
      EXPECT_EQ(matmul_kernel_level(*w), want) << isa_name(isa);
      EXPECT_EQ(matmul_kernel_description(t),
                std::string(type_name(t)) + (w->interleaved() ? " interleaved " : " rows ") + isa_name(want));
    }
    const auto k = pack_matrix(kRowsOnly, 256, 16, rows_only.data());
    EXPECT_FALSE(k->interleaved());
    EXPECT_EQ(matmul_kernel_level(*k), resolved_isa(kRowsOnly, isa));
    EXPECT_EQ(matmul_kernel_description(kRowsOnly),
              std::string(type_name(kRowsOnly)) + " rows " + isa_name(resolved_isa(kRowsOnly, isa)));
  }
  set_isa_level(saved);
}

// The line this test prints (ctest --verbose, or test_backend run directly): which levels of this
// architecture the per-level kernel tests (test_kernels_simd, test_iq_kernels, test_kquant_*, test_matmul*,
// test_cpu_ops) ran at, which they skipped for lack of CPU support, and the kernels each level's Q4_0 / Q4_K
// run.
TEST(IsaCoverage, PrintCoveredLevels) {
  std::string covered, skipped;
  for (IsaLevel isa : testing::arch_isa_levels()) {
    if (!isa_supported(isa)) {
      skipped.append(" ").append(isa_name(isa));
      continue;
    }
    // Appends, not operator+ chains: GCC 12 warns falsely (-Wrestrict) on those.
    covered.append(" ").append(isa_name(isa)).append("(q4_0 rows ");
    covered.append(isa_name(resolved_isa(TensorType::Q4_0, isa))).append(", packed ");
    covered.append(isa_name(packed_kernels(isa).level)).append("; q4_k ");
    covered.append(isa_name(resolved_isa(TensorType::Q4_K, isa))).append(")");
  }
  std::printf("ISA levels covered:%s; not on this CPU:%s\n", covered.c_str(),
              skipped.empty() ? " none" : skipped.c_str());
  EXPECT_FALSE(covered.empty());
}

}  // namespace
}  // namespace strata::cpu
