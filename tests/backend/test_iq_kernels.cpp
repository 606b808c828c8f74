// The IQ, ternary and MXFP4 kernels: the scalar reference against double-precision dots of
// dequantize_row's values (the format definition), and every SIMD kernel against the scalar
// reference, over awkward sizes, unaligned pointers, all tile shapes and every ISA level.
//
// Tolerances (test_kernels_util.h's dot_tolerance): every kernel sums exact integers per block and
// differs from the exact dot only by a few float roundings per block, relative to sum |w a|.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "backend/cpu/kernels.h"
#include "test_kernels_util.h"

namespace strata::cpu {
namespace {

using testing::accumulation_terms;
using testing::dot_tolerance;
using testing::fill_random_rows;
using testing::random_floats;
using testing::ref_dot_rows;

const std::vector<TensorType>& iq_types() {
  static const std::vector<TensorType> types = {TensorType::IQ4_NL, TensorType::IQ4_XS, TensorType::MXFP4,
                                                TensorType::TQ1_0,  TensorType::TQ2_0,  TensorType::IQ2_XXS,
                                                TensorType::IQ2_XS, TensorType::IQ2_S,  TensorType::IQ3_XXS,
                                                TensorType::IQ3_S,  TensorType::IQ1_S,  TensorType::IQ1_M};
  return types;
}

struct Case {
  TensorType type;
  IsaLevel isa;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return std::string(type_name(info.param.type)) + "_" + isa_name(info.param.isa);
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (TensorType t : iq_types())
    for (IsaLevel isa : testing::arch_isa_levels()) cases.push_back({t, isa});
  return cases;
}

// 1, 2, 31, 33, 257 blocks of 32, or 1, 2, 3, 5, 17 super-blocks of 256.
std::vector<int64_t> sizes(TensorType type) {
  const int64_t bs = type_traits(type).block_size;
  if (bs == 32) return {bs, 2 * bs, 31 * bs, 33 * bs, 257 * bs};
  return {bs, 2 * bs, 3 * bs, 5 * bs, 17 * bs};
}

class IqKernels : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam().isa)) GTEST_SKIP() << "CPU lacks " << isa_name(GetParam().isa);
    ASSERT_TRUE(has_type_kernels(GetParam().type));
    // The kernels this level runs: its own, or (a level without its own, e.g. avxvnni) those of
    // the level it falls back to, which the level must include.
    ASSERT_TRUE(isa_includes(GetParam().isa, resolved_isa(GetParam().type, GetParam().isa)));
  }
  const TypeKernels& ref() const { return type_kernels(GetParam().type, IsaLevel::Scalar); }
  const TypeKernels& kern() const { return type_kernels(GetParam().type, GetParam().isa); }
};

TEST_P(IqKernels, ActivationFormatIsLlamaCpps) {
  const TensorType t = GetParam().type;
  const bool q8_0 = t == TensorType::IQ4_NL || t == TensorType::MXFP4;
  EXPECT_EQ(kern().vec_dot_type, q8_0 ? TensorType::Q8_0 : TensorType::Q8_K);
  const int64_t n = 3 * type_traits(kern().vec_dot_type).block_size * (q8_0 ? 8 : 1);
  const std::vector<float> x = random_floats(static_cast<size_t>(n), 3, 2.0f);
  std::vector<uint8_t> a(row_bytes(kern().vec_dot_type, n) + 3), b(a.size());
  ref().from_float(x.data(), a.data() + 1, n);
  kern().from_float(x.data(), b.data() + 1, n);
  EXPECT_EQ(a, b);
}

// Against the exact dot of the dequantized rows: the scalar reference here, every level through
// VecDotMatchesScalar below.
TEST_P(IqKernels, VecDotMatchesDequantizedDot) {
  const TensorType wt = GetParam().type, at = kern().vec_dot_type;
  for (int64_t n : sizes(wt)) {
    for (uint32_t trial = 0; trial < 3; ++trial) {
      const std::vector<float> x =
          random_floats(static_cast<size_t>(n), 40 + trial, trial == 2 ? 30.0f : 1.0f);
      std::vector<uint8_t> w(row_bytes(wt, n)), a(row_bytes(at, n));
      fill_random_rows(wt, n, 1, 0, w.data(), 7 * trial + static_cast<uint32_t>(n));
      ref().from_float(x.data(), a.data(), n);
      const auto exact = ref_dot_rows(wt, w.data(), at, a.data(), n);
      const float got = kern().vec_dot(n, w.data(), a.data());
      ASSERT_NEAR(got, exact.value, dot_tolerance(accumulation_terms(wt, n), exact.abs_sum))
          << "n=" << n << " trial " << trial;
    }
  }
}

TEST_P(IqKernels, VecDotMatchesScalarAtOddAddresses) {
  const TensorType wt = GetParam().type, at = kern().vec_dot_type;
  for (int64_t n : sizes(wt)) {
    const std::vector<float> x = random_floats(static_cast<size_t>(n), 11);
    for (int woff = 0; woff < 4; ++woff) {
      const int aoff = (woff * 3 + 1) % 4;
      std::vector<uint8_t> w(row_bytes(wt, n) + 4), a(row_bytes(at, n) + 4);
      fill_random_rows(wt, n, 1, 0, w.data() + woff, 100 + static_cast<uint32_t>(n));
      ref().from_float(x.data(), a.data() + aoff, n);
      const float expect = ref().vec_dot(n, w.data() + woff, a.data() + aoff);
      const float got = kern().vec_dot(n, w.data() + woff, a.data() + aoff);
      const auto exact = ref_dot_rows(wt, w.data() + woff, at, a.data() + aoff, n);
      ASSERT_NEAR(got, expect, dot_tolerance(accumulation_terms(wt, n), exact.abs_sum))
          << "n=" << n << " offsets " << woff << "," << aoff;
    }
  }
}

// All tile shapes 1x1..8x8 on rows with odd strides at odd addresses; outputs outside the tile
// must stay untouched.
TEST_P(IqKernels, GemmTileMatchesScalarForAllShapes) {
  const TensorType wt = GetParam().type, at = kern().vec_dot_type;
  EXPECT_GE(kern().tile_rows, 1);
  EXPECT_LE(kern().tile_rows, kMaxTileRows);
  EXPECT_GE(kern().tile_cols, 1);
  EXPECT_LE(kern().tile_cols, kMaxTileCols);
  const int64_t n = 3 * type_traits(wt).block_size;
  const size_t ws = row_bytes(wt, n) + 3, as = row_bytes(at, n) + 5;
  std::vector<uint8_t> w(ws * kMaxTileRows + 4), a(as * kMaxTileCols + 4);
  fill_random_rows(wt, n, kMaxTileRows, ws, w.data() + 1, 5);
  const std::vector<float> x = random_floats(static_cast<size_t>(n * kMaxTileCols), 9);
  for (int c = 0; c < kMaxTileCols; ++c) ref().from_float(x.data() + c * n, a.data() + 3 + c * as, n);
  const size_t os = kMaxTileRows + 1;
  for (int nr = 1; nr <= kMaxTileRows; ++nr)
    for (int nc = 1; nc <= kMaxTileCols; ++nc) {
      std::vector<float> out(os * kMaxTileCols, -12345.0f);
      kern().gemm_tile(n, nr, nc, w.data() + 1, ws, a.data() + 3, as, out.data(), os);
      for (int c = 0; c < kMaxTileCols; ++c)
        for (int r = 0; r < static_cast<int>(os); ++r) {
          const float got = out[c * os + r];
          if (r >= nr || c >= nc) {
            ASSERT_EQ(got, -12345.0f) << "wrote outside the " << nr << "x" << nc << " tile";
            continue;
          }
          const uint8_t* wr = w.data() + 1 + r * ws;
          const uint8_t* ar = a.data() + 3 + c * as;
          const auto exact = ref_dot_rows(wt, wr, at, ar, n);
          ASSERT_NEAR(got, ref().vec_dot(n, wr, ar), dot_tolerance(accumulation_terms(wt, n), exact.abs_sum))
              << nr << "x" << nc << " tile, element " << r << "," << c;
        }
    }
}

// Batch invariance (kernels.h): an output's bits do not depend on the tile it was computed in.
TEST_P(IqKernels, TileShapeDoesNotChangeResultBits) {
  const TensorType wt = GetParam().type, at = kern().vec_dot_type;
  const int64_t n = 5 * type_traits(wt).block_size;
  const size_t ws = row_bytes(wt, n), as = row_bytes(at, n);
  std::vector<uint8_t> w(ws * kMaxTileRows), a(as * kMaxTileCols);
  fill_random_rows(wt, n, kMaxTileRows, ws, w.data(), 21);
  const std::vector<float> x = random_floats(static_cast<size_t>(n * kMaxTileCols), 22);
  for (int c = 0; c < kMaxTileCols; ++c) ref().from_float(x.data() + c * n, a.data() + c * as, n);
  std::vector<float> full(kMaxTileRows * kMaxTileCols);
  kern().gemm_tile(n, kMaxTileRows, kMaxTileCols, w.data(), ws, a.data(), as, full.data(), kMaxTileRows);
  for (int c = 0; c < kMaxTileCols; ++c)
    for (int r = 0; r < kMaxTileRows; ++r) {
      float one;
      kern().gemm_tile(n, 1, 1, w.data() + r * ws, ws, a.data() + c * as, as, &one, 1);
      ASSERT_EQ(one, full[c * kMaxTileRows + r]) << "element " << r << "," << c;
      ASSERT_EQ(kern().vec_dot(n, w.data() + r * ws, a.data() + c * as), one);
    }
}

// The panel (prefill: rows decoded once for many tokens) against the 1 x 1 tile, bit for bit,
// over awkward token counts, partial row groups and unaligned rows; it must not write outside.
TEST_P(IqKernels, GemmPanelEqualsTheTileBitwise) {
  if (kern().gemm_panel == nullptr) GTEST_SKIP() << "no panel for this type at this level";
  const TensorType wt = GetParam().type, at = kern().vec_dot_type;
  const int64_t n = 5 * type_traits(wt).block_size;
  constexpr int kMaxTokens = 33;
  const size_t ws = row_bytes(wt, n) + 3, as = row_bytes(at, n) + 5;
  std::vector<uint8_t> w(ws * kMaxTileRows + 4), a(as * kMaxTokens + 4);
  fill_random_rows(wt, n, kMaxTileRows, ws, w.data() + 1, 31);
  std::vector<float> x = random_floats(static_cast<size_t>(n * kMaxTokens), 32);
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(n + i)] = i % 2 ? 1.0f : -1.0f;  // +-127 throughout
  for (int c = 0; c < kMaxTokens; ++c) ref().from_float(x.data() + c * n, a.data() + 3 + c * as, n);
  const size_t os = kMaxTileRows + 1;
  for (int nr = 1; nr <= kern().tile_rows; ++nr)
    for (int nc : {1, 2, 5, 31, 33}) {
      std::vector<float> out(os * kMaxTokens, -12345.0f);
      kern().gemm_panel(n, nr, nc, w.data() + 1, ws, a.data() + 3, as, out.data(), os);
      for (int c = 0; c < kMaxTokens; ++c)
        for (int r = 0; r < static_cast<int>(os); ++r) {
          const float got = out[c * os + r];
          if (r >= nr || c >= nc) {
            ASSERT_EQ(got, -12345.0f) << "wrote outside " << nr << " rows x " << nc << " tokens";
            continue;
          }
          float one;
          kern().gemm_tile(n, 1, 1, w.data() + 1 + r * ws, ws, a.data() + 3 + c * as, as, &one, 1);
          ASSERT_EQ(got, one) << nr << " rows x " << nc << " tokens, element " << r << "," << c;
        }
    }
}

// The NEON kernels of the types with a super-block decoder (iq_tile_neon.h) run the scalar
// reference's integer sums and float steps: every output has its bits, tile and panel alike.
TEST_P(IqKernels, NeonDecoderKernelsAreTheScalarReferenceBitwise) {
  const IsaLevel level = resolved_isa(GetParam().type, GetParam().isa);
  if (level != IsaLevel::Neon && level != IsaLevel::NeonDotprod) GTEST_SKIP() << "not a NEON decoder kernel";
  const TensorType wt = GetParam().type, at = kern().vec_dot_type;
  if (wt == TensorType::IQ4_NL || wt == TensorType::IQ4_XS || wt == TensorType::MXFP4) GTEST_SKIP();
  const int64_t n = 5 * type_traits(wt).block_size;
  constexpr int kRows = 3, kTokens = 6;
  const size_t ws = row_bytes(wt, n) + 1, as = row_bytes(at, n) + 3;
  std::vector<uint8_t> w(ws * kRows), a(as * kTokens);
  fill_random_rows(wt, n, kRows, ws, w.data(), 77);
  const std::vector<float> x = random_floats(static_cast<size_t>(n * kTokens), 78, 4.0f);
  for (int c = 0; c < kTokens; ++c) ref().from_float(x.data() + c * n, a.data() + c * as, n);
  std::vector<float> tile(kRows * kTokens), panel(kRows * kTokens);
  kern().gemm_tile(n, kRows, 4, w.data(), ws, a.data(), as, tile.data(), kRows);
  kern().gemm_tile(n, kRows, 2, w.data(), ws, a.data() + 4 * as, as, tile.data() + 4 * kRows, kRows);
  kern().gemm_panel(n, kRows, kTokens, w.data(), ws, a.data(), as, panel.data(), kRows);
  for (int c = 0; c < kTokens; ++c)
    for (int r = 0; r < kRows; ++r) {
      const float want = ref().vec_dot(n, w.data() + r * ws, a.data() + c * as);
      ASSERT_EQ(kern().vec_dot(n, w.data() + r * ws, a.data() + c * as), want) << r << "," << c;
      ASSERT_EQ(tile[c * kRows + r], want) << r << "," << c;
      ASSERT_EQ(panel[c * kRows + r], want) << r << "," << c;
    }
}

TEST_P(IqKernels, ZeroActivationsGiveZero) {
  const TensorType wt = GetParam().type, at = kern().vec_dot_type;
  const int64_t n = 3 * type_traits(wt).block_size;
  std::vector<uint8_t> w(row_bytes(wt, n)), a(row_bytes(at, n));
  fill_random_rows(wt, n, 1, 0, w.data(), 5);
  const std::vector<float> zeros(static_cast<size_t>(n), 0.0f);
  kern().from_float(zeros.data(), a.data(), n);
  EXPECT_EQ(kern().vec_dot(n, w.data(), a.data()), 0.0f);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, IqKernels, ::testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace strata::cpu
