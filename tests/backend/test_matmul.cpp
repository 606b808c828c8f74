// matmul() against the double-precision reference built from dequantize_row, for every type,
// ISA level, layout, thread count and awkward batch sizes; bad input; STRATA_ISA forcing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/packed_kernels.h"
#include "common/fixtures.h"
#include "core/check.h"
#include "core/thread_pool.h"
#include "quant/blocks.h"
#include "test_kernels_util.h"

namespace strata::cpu {
namespace {

using testing::dot_tolerance;
using testing::fill_random_rows;
using testing::random_floats;
using testing::ref_dot_rows;

// Restores the ISA level a test changed.
class IsaGuard {
 public:
  IsaGuard() : saved_(isa_level()) {}
  ~IsaGuard() { set_isa_level(saved_); }

 private:
  IsaLevel saved_;
};

// Float accumulation terms of one output: blocks of 32 (legacy), sub-blocks of 16 (K-quants),
// elements (float types); two roundings each.
int64_t terms(TensorType t, int64_t n) {
  if (testing::is_float_type(t)) return n;
  return 2 * n / (type_traits(t).block_size == 32 ? 32 : 16);
}

// Checks y ([n_tokens, n_out]) = w ([n_out, n_in] rows of wt) x ([n_tokens, n_in]).
// The interleaved super-blocks quantize activations per 32 (packed_act_type), their rows as Q8_K.
void expect_matmul_close(TensorType wt, const std::vector<uint8_t>& w, const std::vector<float>& x,
                         const std::vector<float>& y, int64_t n_in, int64_t n_out, int64_t n_tokens,
                         const std::string& what, bool interleaved = false) {
  const bool super_packed = testing::packs_super_blocks(wt) && interleaved;
  const TypeKernels& ref = type_kernels(wt, IsaLevel::Scalar);
  const TensorType act_type = super_packed ? testing::packed_act_type(wt) : ref.vec_dot_type;
  const size_t wrow = row_bytes(wt, n_in);
  std::vector<uint8_t> act(row_bytes(act_type, n_in));
  for (int64_t t = 0; t < n_tokens; ++t) {
    if (super_packed)
      testing::quantize_packed_act_row(wt, x.data() + t * n_in, act.data(), n_in);
    else
      ref.from_float(x.data() + t * n_in, act.data(), n_in);
    for (int64_t o = 0; o < n_out; ++o) {
      const auto exact = super_packed ? testing::ref_dot_packed(wt, w.data() + o * wrow, act.data(), n_in)
                                      : ref_dot_rows(wt, w.data() + o * wrow, act_type, act.data(), n_in);
      ASSERT_NEAR(y[static_cast<size_t>(t * n_out + o)], exact.value,
                  dot_tolerance(terms(wt, n_in), exact.abs_sum))
          << what << " token " << t << " row " << o;
    }
  }
}

struct MatmulCase {
  TensorType type;
  IsaLevel isa;
  PackLayout layout;
};

std::vector<MatmulCase> matmul_cases() {
  std::vector<MatmulCase> cases;
  const TensorType types[] = {
      TensorType::F32,   TensorType::F16,     TensorType::BF16,  TensorType::Q4_0,    TensorType::Q4_1,
      TensorType::Q5_0,  TensorType::Q5_1,    TensorType::Q8_0,  TensorType::Q2_K,    TensorType::Q3_K,
      TensorType::Q4_K,  TensorType::Q5_K,    TensorType::Q6_K,  TensorType::IQ4_NL,  TensorType::IQ4_XS,
      TensorType::MXFP4, TensorType::TQ1_0,   TensorType::TQ2_0, TensorType::IQ2_XXS, TensorType::IQ2_XS,
      TensorType::IQ2_S, TensorType::IQ3_XXS, TensorType::IQ3_S, TensorType::IQ1_S,   TensorType::IQ1_M};
  for (TensorType t : types)
    for (IsaLevel isa : testing::arch_isa_levels()) {
      cases.push_back({t, isa, PackLayout::Rows});
      if (packable_type(t)) cases.push_back({t, isa, PackLayout::Interleaved});
    }
  return cases;
}

std::string case_name(const ::testing::TestParamInfo<MatmulCase>& info) {
  return std::string(type_name(info.param.type)) + "_" + isa_name(info.param.isa) +
         (info.param.layout == PackLayout::Interleaved ? "_interleaved" : "_rows");
}

class Matmul : public ::testing::TestWithParam<MatmulCase> {
 protected:
  void SetUp() override {
    // Levels the CPU lacks are skipped (test_backend's "ISA levels tested" line says which);
    // a listed type without kernels is a failure.
    if (!isa_supported(GetParam().isa)) GTEST_SKIP() << "CPU lacks " << isa_name(GetParam().isa);
    ASSERT_TRUE(has_type_kernels(GetParam().type)) << "no kernels for " << type_name(GetParam().type);
  }
  IsaGuard guard_;
};

TEST_P(Matmul, MatchesDoubleReferenceForAwkwardShapes) {
  const auto [wt, isa, layout] = GetParam();
  set_isa_level(isa);
  const int64_t n_in = 256;
  ThreadPool pool2(2), pool3(3);
  for (int64_t n_out : {int64_t{37}, int64_t{5}}) {
    std::vector<uint8_t> w(row_bytes(wt, n_in) * static_cast<size_t>(n_out));
    fill_random_rows(wt, n_in, n_out, row_bytes(wt, n_in), w.data(), 17 + static_cast<uint32_t>(n_out));
    auto pm = pack_matrix(wt, n_in, n_out, w.data(), layout);
    ASSERT_EQ(pm->interleaved(), layout == PackLayout::Interleaved);
    for (int64_t n_tokens : {1, 2, 7, 64, 100}) {
      const std::vector<float> x =
          random_floats(static_cast<size_t>(n_in * n_tokens), 3 + static_cast<uint32_t>(n_tokens));
      std::vector<float> y(static_cast<size_t>(n_out * n_tokens), -1.0f);
      matmul(n_tokens == 7 ? pool3 : pool2, *pm, x.data(), y.data(), n_tokens);
      expect_matmul_close(wt, w, x, y, n_in, n_out, n_tokens,
                          "n_out " + std::to_string(n_out) + " n_tokens " + std::to_string(n_tokens),
                          pm->interleaved());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, Matmul, ::testing::ValuesIn(matmul_cases()), case_name);

// A problem big enough for several cache chunks and token panels per thread, with a partial
// last group, in the automatic layout and in rows.
void check_large_matmul(TensorType wt, uint32_t seed) {
  const int64_t n_in = 2048, n_out = 333, n_tokens = 40;
  std::vector<uint8_t> w(row_bytes(wt, n_in) * n_out);
  fill_random_rows(wt, n_in, n_out, row_bytes(wt, n_in), w.data(), seed);
  const std::vector<float> x = random_floats(static_cast<size_t>(n_in * n_tokens), seed + 1);
  ThreadPool pool(2);
  for (PackLayout layout : {PackLayout::Auto, PackLayout::Rows}) {
    auto pm = pack_matrix(wt, n_in, n_out, w.data(), layout);
    std::vector<float> y(static_cast<size_t>(n_out * n_tokens));
    matmul(pool, *pm, x.data(), y.data(), n_tokens);
    expect_matmul_close(wt, w, x, y, n_in, n_out, n_tokens, pm->interleaved() ? "interleaved" : "rows",
                        pm->interleaved());
  }
}

TEST(MatmulLarge, Q4_0ManyChunksAndPanels) {
  check_large_matmul(TensorType::Q4_0, 77);
}

// The interleaved super-blocks of Q4_K and IQ4_XS.
TEST(MatmulLarge, Q4_KManyChunksAndPanels) {
  check_large_matmul(TensorType::Q4_K, 79);
}

TEST(MatmulLarge, IQ4_XSManyChunksAndPanels) {
  check_large_matmul(TensorType::IQ4_XS, 81);
}

TEST(MatmulInput, RejectsBadShapesCleanly) {
  std::vector<uint8_t> w(1024);
  EXPECT_THROW(pack_matrix(TensorType::Q4_0, 33, 4, w.data()), Error);  // not whole blocks
  EXPECT_THROW(pack_matrix(TensorType::Q4_K, 32, 4, w.data()), Error);
  EXPECT_THROW(pack_matrix(TensorType::F32, 0, 4, w.data()), Error);
  EXPECT_THROW(pack_matrix(TensorType::F32, 4, 0, w.data()), Error);
  EXPECT_THROW(pack_matrix(TensorType::F16, 32, 4, w.data(), PackLayout::Interleaved), Error);
  EXPECT_THROW(pack_matrix(TensorType::Q8_1, 32, 4, w.data()), Error);  // activation-only type
}

TEST(MatmulInput, ZeroTokensWritesNothing) {
  std::vector<uint8_t> w(row_bytes(TensorType::Q8_0, 64) * 3);
  fill_random_rows(TensorType::Q8_0, 64, 3, row_bytes(TensorType::Q8_0, 64), w.data(), 1);
  auto pm = pack_matrix(TensorType::Q8_0, 64, 3, w.data());
  ThreadPool pool(2);
  float y = 42.0f;
  matmul(pool, *pm, nullptr, &y, 0);
  EXPECT_EQ(y, 42.0f);
}

TEST(MatmulPack, InterleavedCopyCostsNoMoreThanTheSource) {
  for (TensorType t : {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1,
                       TensorType::Q8_0, TensorType::IQ4_NL}) {
    const int64_t n_in = 128, n_out = 64;
    std::vector<uint8_t> w(row_bytes(t, n_in) * n_out);
    auto pm = pack_matrix(t, n_in, n_out, w.data(), PackLayout::Interleaved);
    EXPECT_EQ(pm->owned_bytes(), w.size()) << type_name(t);
    EXPECT_EQ(pm->weight_bytes(), w.size());
    EXPECT_EQ(pack_matrix(t, n_in, n_out, w.data(), PackLayout::Rows)->owned_bytes(), 0u);
  }
}

// The super-blocks carry their scales unpacked: per 16 rows of 256 columns, Q4_K 2368 bytes
// (2.8% more than the 16 x 144 source bytes), Q5_K 2880 (2.3% more than 16 x 176), IQ4_XS 2208 (1.5% more
// than 16 x 136), Q6_K 3360 (as many as 16 x 210), Q3_K 1824 (3.6% more than 16 x 110), Q2_K 1344
// (as many as 16 x 84); a partial last group is stored whole.
TEST(MatmulPack, InterleavedSuperBlockCopySize) {
  const int64_t n_in = 512;
  for (const auto& [t, packed_bytes] :
       {std::pair{TensorType::Q4_K, size_t{2368}}, std::pair{TensorType::IQ4_XS, size_t{2208}},
        std::pair{TensorType::Q5_K, size_t{2880}}, std::pair{TensorType::Q6_K, size_t{3360}},
        std::pair{TensorType::Q3_K, size_t{1824}}, std::pair{TensorType::Q2_K, size_t{1344}}})
    for (int64_t n_out : {int64_t{32}, int64_t{17}}) {
      std::vector<uint8_t> w(row_bytes(t, n_in) * static_cast<size_t>(n_out));
      fill_random_rows(t, n_in, n_out, row_bytes(t, n_in), w.data(), 5);
      auto pm = pack_matrix(t, n_in, n_out, w.data(), PackLayout::Interleaved);
      const size_t groups = static_cast<size_t>((n_out + 15) / 16);
      EXPECT_EQ(pm->owned_bytes(), groups * 2 * packed_bytes) << type_name(t) << ", " << n_out << " rows";
      EXPECT_EQ(pm->weight_bytes(), w.size());
    }
}

// MXFP4's E8M0 scales become exact fp16s: 288 bytes per 16 blocks (the source's 272). A scale
// beyond fp16's range (2^-24 .. 2^15) keeps the matrix in rows (the row kernels multiply it); an
// explicit interleaved request for it is an error.
TEST(MatmulPack, Mxfp4InterleavesOnlyScalesThatFp16Holds) {
  const int64_t n_in = 96, n_out = 20;
  const size_t rb = row_bytes(TensorType::MXFP4, n_in);
  std::vector<uint8_t> w(rb * n_out);
  fill_random_rows(TensorType::MXFP4, n_in, n_out, rb, w.data(), 9);
  auto pm = pack_matrix(TensorType::MXFP4, n_in, n_out, w.data(), PackLayout::Interleaved);
  EXPECT_EQ(pm->owned_bytes(), 2u * 3 * 288);
  for (uint8_t e : {uint8_t{103}, uint8_t{144}, uint8_t{255}}) {
    std::vector<uint8_t> bad = w;
    bad[7 * rb + sizeof(BlockMXFP4)] = e;  // row 7, block 1
    EXPECT_THROW(pack_matrix(TensorType::MXFP4, n_in, n_out, bad.data(), PackLayout::Interleaved), Error)
        << int{e};
    auto rows = pack_matrix(TensorType::MXFP4, n_in, n_out, bad.data());
    EXPECT_FALSE(rows->interleaved()) << int{e};
  }
  for (uint8_t e : {uint8_t{104}, uint8_t{143}}) {  // the range's ends: 2^-24 (subnormal), 2^15
    std::vector<uint8_t> edge = w;
    edge[7 * rb + sizeof(BlockMXFP4)] = e;
    EXPECT_TRUE(
        pack_matrix(TensorType::MXFP4, n_in, n_out, edge.data(), PackLayout::Interleaved)->interleaved());
  }
}

// A model's Q2_K..Q6_K, IQ4_XS and MXFP4 matrices multiply interleaved wherever a SIMD level runs
// (prefill is compute-bound: the row kernels' per-row horizontal sums are the cost this removes;
// on aarch64 those types have no SIMD row kernels at all).
TEST(MatmulPack, AutoInterleavesSuperBlocksAtEverySimdLevel) {
  IsaGuard guard;
  for (TensorType t : {TensorType::Q4_K, TensorType::Q5_K, TensorType::IQ4_XS, TensorType::Q6_K,
                       TensorType::Q3_K, TensorType::Q2_K, TensorType::MXFP4}) {
    std::vector<uint8_t> w(row_bytes(t, 256) * 16);
    fill_random_rows(t, 256, 16, row_bytes(t, 256), w.data(), 6);
    for (IsaLevel isa : testing::arch_isa_levels()) {
      if (!isa_supported(isa)) continue;
      set_isa_level(isa);
      EXPECT_EQ(pack_matrix(t, 256, 16, w.data())->interleaved(), isa != IsaLevel::Scalar)
          << type_name(t) << " " << isa_name(isa);
    }
  }
}

// STRATA_ISA is read once per process, so each level runs this binary again with the variable
// set and only the (otherwise disabled) probe below, which checks the level, the kernels it
// resolves to and a matmul. An unknown name keeps the best level.
TEST(MatmulIsaEnv, ForcedLevelIsHonoured) {
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(len, 0);
  self[len] = '\0';
  for (const char* level :
       {"scalar", "avx2", "avxvnni", "avx512", "amx", "neon", "dotprod", "i8mm", "bogus"}) {
    std::vector<std::string> argv = {"/usr/bin/env", std::string("STRATA_ISA=") + level};
#ifdef STRATA_TEST_EMULATOR
    // A cross-compiled test binary runs under its emulator (tests/CMakeLists.txt).
    std::istringstream emulator(STRATA_TEST_EMULATOR);
    for (std::string word; emulator >> word;) argv.push_back(word);
#endif
    argv.insert(argv.end(), {self, "--gtest_filter=MatmulIsaEnvProbe.*", "--gtest_also_run_disabled_tests"});
    const auto r = strata::test::run_command(argv);
    EXPECT_EQ(r.exit_code, 0) << level << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find("[  PASSED  ] 1 test"), std::string::npos) << level << "\n" << r.out;
    EXPECT_EQ(r.out.find("SKIPPED"), std::string::npos) << level << "\n" << r.out;
    if (std::string(level) == "bogus") {
      EXPECT_NE(r.err.find("STRATA_ISA=bogus"), std::string::npos) << r.err;
    }
  }
}

// The level a STRATA_ISA value must give, from the CPU's feature bits (cpu_features.h's table):
// the named level if the CPU has everything it needs, else the next one down its chain.
IsaLevel expected_level(const std::string& want) {
  const CpuFeatures& f = cpu_features();
  const bool avx2 = f.avx2 && f.fma && f.f16c && f.bmi2;
  const bool avx512 = avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512vnni &&
                      f.avx512bf16 && f.avx512vbmi;
  const bool vnni = avx2 && f.avxvnni;
  const bool neon = f.neon, dot = neon && f.dotprod, i8mm = dot && f.i8mm;
  if (want == "scalar") return IsaLevel::Scalar;
  if (want == "avx2") return avx2 ? IsaLevel::Avx2 : IsaLevel::Scalar;
  if (want == "avxvnni") return vnni ? IsaLevel::AvxVnni : expected_level("avx2");
  if (want == "avx512") return avx512 ? IsaLevel::Avx512 : expected_level("avxvnni");
  if (want == "amx") return avx512 && f.amx_int8 ? IsaLevel::Amx : expected_level("avx512");
  if (want == "neon") return neon ? IsaLevel::Neon : IsaLevel::Scalar;
  if (want == "dotprod") return dot ? IsaLevel::NeonDotprod : expected_level("neon");
  if (want == "i8mm") return i8mm ? IsaLevel::NeonI8mm : expected_level("dotprod");
    // Unknown: the best of this CPU.
#if defined(__aarch64__)
  return expected_level("i8mm");
#else
  return expected_level("amx");
#endif
}

TEST(MatmulIsaEnvProbe, DISABLED_LevelFromEnvironment) {
  const char* env = std::getenv("STRATA_ISA");
  ASSERT_NE(env, nullptr) << "run by MatmulIsaEnv with STRATA_ISA set";
  const std::string want = env;
  const IsaLevel level = expected_level(want);
  ASSERT_EQ(isa_level(), level) << want;
  // The registry serves that level's kernels (or those of a level below it on its chain).
  const IsaLevel q4 = resolved_isa(TensorType::Q4_0, isa_level());
  EXPECT_TRUE(isa_includes(level, q4)) << isa_name(q4);
  EXPECT_EQ(&type_kernels(TensorType::Q4_0), &type_kernels(TensorType::Q4_0, q4));
  // Auto packing interleaves exactly when a SIMD kernel set of that layout is usable (every
  // level but scalar), and the interleaved kernels are the level's own.
  const int64_t n_in = 96, n_out = 21, n_tokens = 3;
  std::vector<uint8_t> w(row_bytes(TensorType::Q4_0, n_in) * n_out);
  fill_random_rows(TensorType::Q4_0, n_in, n_out, row_bytes(TensorType::Q4_0, n_in), w.data(), 5);
  auto pm = pack_matrix(TensorType::Q4_0, n_in, n_out, w.data());
  EXPECT_EQ(pm->interleaved(), level != IsaLevel::Scalar);
  EXPECT_EQ(packed_kernels(isa_level()).level, level);
  const std::vector<float> x = random_floats(static_cast<size_t>(n_in * n_tokens), 6);
  std::vector<float> y(static_cast<size_t>(n_out * n_tokens));
  ThreadPool pool(2);
  matmul(pool, *pm, x.data(), y.data(), n_tokens);
  expect_matmul_close(TensorType::Q4_0, w, x, y, n_in, n_out, n_tokens, "env " + want);
}

}  // namespace
}  // namespace strata::cpu
