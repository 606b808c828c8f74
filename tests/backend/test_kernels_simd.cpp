// Every SIMD kernel of the float and legacy quantized types against its scalar reference, over
// awkward sizes, unaligned pointers and all tile shapes.
//
// Tolerances: the activation converters must match bit for bit (same rounding everywhere). Dot
// products differ from the scalar reference only by float summation order (integer block sums
// are exact), bounded by dot_tolerance() of test_kernels_util.h: a few FLT_EPSILON per
// accumulated term, relative to the sum of |products|.
#include <gtest/gtest.h>

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

struct SimdCase {
  TensorType type;
  IsaLevel isa;
};

std::string case_name(const ::testing::TestParamInfo<SimdCase>& info) {
  return std::string(type_name(info.param.type)) + "_" + isa_name(info.param.isa);
}

std::vector<SimdCase> simd_cases() {
  std::vector<SimdCase> cases;
  for (TensorType t : testing::legacy_and_float_types())
    for (IsaLevel isa : testing::arch_simd_levels()) cases.push_back({t, isa});
  return cases;
}

// Row lengths: 1, 31, 33, 257 blocks (quantized) or elements (float), and a few more.
std::vector<int64_t> sizes(TensorType type) {
  const int64_t bs = type_traits(type).block_size;
  if (bs == 1) return {1, 7, 16, 31, 33, 64, 257, 1000};
  return {bs, 2 * bs, 31 * bs, 33 * bs, 257 * bs};
}

class SimdKernels : public ::testing::TestWithParam<SimdCase> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam().isa)) GTEST_SKIP() << "CPU lacks " << isa_name(GetParam().isa);
    // Its own kernels, or those of the level it falls back to (which it must include).
    ASSERT_TRUE(isa_includes(GetParam().isa, resolved_isa(GetParam().type, GetParam().isa)));
  }
  const TypeKernels& ref() const { return type_kernels(GetParam().type, IsaLevel::Scalar); }
  const TypeKernels& simd() const { return type_kernels(GetParam().type, GetParam().isa); }
};

TEST_P(SimdKernels, ActivationConversionIsBitIdentical) {
  const TensorType at = ref().vec_dot_type;
  ASSERT_EQ(simd().vec_dot_type, at);
  for (int64_t n : sizes(GetParam().type)) {
    std::vector<float> x = random_floats(static_cast<size_t>(n), 7, 3.0f);
    if (n >= 64)
      for (int i = 0; i < 32; ++i) x[static_cast<size_t>(i)] = 0.0f;  // an all-zero block: d = 0
    const size_t bytes = row_bytes(at, n);
    for (int off = 0; off < 4; ++off) {
      std::vector<uint8_t> a(bytes + 8, 0xcd), b(bytes + 8, 0xcd);
      ref().from_float(x.data(), a.data() + off, n);
      simd().from_float(x.data(), b.data() + off, n);
      ASSERT_EQ(a, b) << "n=" << n << " offset " << off;
    }
  }
}

TEST_P(SimdKernels, VecDotMatchesScalar) {
  const TensorType wt = GetParam().type, at = ref().vec_dot_type;
  for (int64_t n : sizes(wt)) {
    const std::vector<float> x = random_floats(static_cast<size_t>(n), 11);
    for (int woff = 0; woff < 4; ++woff) {
      const int aoff = (woff * 3 + 1) % 4;
      std::vector<uint8_t> w(row_bytes(wt, n) + 4), a(row_bytes(at, n) + 4);
      fill_random_rows(wt, n, 1, 0, w.data() + woff, 100 + static_cast<uint32_t>(n));
      ref().from_float(x.data(), a.data() + aoff, n);
      const float expect = ref().vec_dot(n, w.data() + woff, a.data() + aoff);
      const float got = simd().vec_dot(n, w.data() + woff, a.data() + aoff);
      const auto exact = ref_dot_rows(wt, w.data() + woff, at, a.data() + aoff, n);
      ASSERT_NEAR(got, expect, dot_tolerance(accumulation_terms(wt, n), exact.abs_sum))
          << "n=" << n << " offsets " << woff << "," << aoff;
    }
  }
}

// All tile shapes 1x1..8x8 on rows with odd strides at odd addresses; outputs outside the tile
// must stay untouched.
TEST_P(SimdKernels, GemmTileMatchesScalarForAllShapes) {
  const TensorType wt = GetParam().type, at = ref().vec_dot_type;
  const int64_t n = type_traits(wt).block_size == 1 ? 37 : 3 * type_traits(wt).block_size;
  const size_t ws = row_bytes(wt, n) + 3, as = row_bytes(at, n) + 5;
  std::vector<uint8_t> w(ws * kMaxTileRows + 4), a(as * kMaxTileCols + 4);
  fill_random_rows(wt, n, kMaxTileRows, ws, w.data() + 1, 5);
  const std::vector<float> x = random_floats(static_cast<size_t>(n * kMaxTileCols), 9);
  for (int c = 0; c < kMaxTileCols; ++c) ref().from_float(x.data() + c * n, a.data() + 3 + c * as, n);
  const size_t os = kMaxTileRows + 1;
  for (int nr = 1; nr <= kMaxTileRows; ++nr)
    for (int nc = 1; nc <= kMaxTileCols; ++nc) {
      std::vector<float> out(os * kMaxTileCols, -12345.0f);
      simd().gemm_tile(n, nr, nc, w.data() + 1, ws, a.data() + 3, as, out.data(), os);
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
TEST_P(SimdKernels, TileShapeDoesNotChangeResultBits) {
  const TensorType wt = GetParam().type, at = ref().vec_dot_type;
  const int64_t n = type_traits(wt).block_size == 1 ? 100 : 5 * type_traits(wt).block_size;
  const size_t ws = row_bytes(wt, n), as = row_bytes(at, n);
  std::vector<uint8_t> w(ws * kMaxTileRows), a(as * kMaxTileCols);
  fill_random_rows(wt, n, kMaxTileRows, ws, w.data(), 21);
  const std::vector<float> x = random_floats(static_cast<size_t>(n * kMaxTileCols), 22);
  for (int c = 0; c < kMaxTileCols; ++c) ref().from_float(x.data() + c * n, a.data() + c * as, n);
  std::vector<float> full(kMaxTileRows * kMaxTileCols);
  simd().gemm_tile(n, kMaxTileRows, kMaxTileCols, w.data(), ws, a.data(), as, full.data(), kMaxTileRows);
  for (int c = 0; c < kMaxTileCols; ++c)
    for (int r = 0; r < kMaxTileRows; ++r) {
      float one;
      simd().gemm_tile(n, 1, 1, w.data() + r * ws, ws, a.data() + c * as, as, &one, 1);
      ASSERT_EQ(one, full[c * kMaxTileRows + r]) << "element " << r << "," << c;
      ASSERT_EQ(simd().vec_dot(n, w.data() + r * ws, a.data() + c * as), one);
    }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, SimdKernels, ::testing::ValuesIn(simd_cases()), case_name);

}  // namespace
}  // namespace strata::cpu
