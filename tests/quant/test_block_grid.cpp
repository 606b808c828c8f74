// The per-element block grids against the scalar dequantizer: for every type with a grid, the
// value of each element's level under its grid equals dequantize_row bit for bit; re-levelled
// blocks keep their parameters and dequantize to the grid values of the new levels; and the
// nearest level is the nearest by brute force.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/tensor_type.h"
#include "quant/block_grid.h"
#include "quant/quantize.h"
#include "quant_test_util.h"

namespace strata {
namespace {

const TensorType kGridTypes[] = {TensorType::Q4_0,  TensorType::Q4_1,  TensorType::Q5_0,   TensorType::Q5_1,
                                 TensorType::Q8_0,  TensorType::Q2_K,  TensorType::Q3_K,   TensorType::Q4_K,
                                 TensorType::Q5_K,  TensorType::Q6_K,  TensorType::IQ4_NL, TensorType::IQ4_XS,
                                 TensorType::MXFP4, TensorType::TQ1_0, TensorType::TQ2_0};

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(BlockGrid, ValuesEqualTheDequantizer) {
  for (TensorType type : kGridTypes) {
    ASSERT_TRUE(has_block_grid(type)) << type_name(type);
    const int64_t B = type_traits(type).block_size, n = 4 * B;
    const size_t bb = type_traits(type).block_bytes;
    for (uint32_t seed = 1; seed <= 3; ++seed) {
      std::vector<float> x = test::gaussian(static_cast<size_t>(n), seed, seed == 3 ? 20.0f : 1.0f);
      if (seed == 2) x[5] = 0.0f, x[7] = 7.5f;  // an outlier and an exact zero
      std::vector<uint8_t> q(row_bytes(type, n));
      quantize_row(type, x.data(), q.data(), n, nullptr);
      std::vector<float> deq(static_cast<size_t>(n));
      dequantize_row(type, q.data(), deq.data(), n);
      std::vector<ElementGrid> grids(static_cast<size_t>(B));
      std::vector<int> levels(static_cast<size_t>(B));
      for (int64_t b = 0; b < n / B; ++b) {
        const uint8_t* blk = q.data() + static_cast<size_t>(b) * bb;
        block_grids(type, blk, grids.data());
        block_levels(type, blk, levels.data());
        for (int64_t e = 0; e < B; ++e) {
          const ElementGrid& g = grids[static_cast<size_t>(e)];
          const int l = levels[static_cast<size_t>(e)];
          ASSERT_GE(l, 0);
          ASSERT_LT(l, g.n_levels);
          ASSERT_EQ(bits(grid_value(g, l)), bits(deq[static_cast<size_t>(b * B + e)]))
              << type_name(type) << " block " << b << " element " << e;
        }
      }
    }
  }
}

TEST(BlockGrid, SetLevelsKeepsParameters) {
  std::mt19937 rng(7);
  for (TensorType type : kGridTypes) {
    const int64_t B = type_traits(type).block_size;
    const size_t bb = type_traits(type).block_bytes;
    const std::vector<float> x = test::gaussian(static_cast<size_t>(B), 11);
    std::vector<uint8_t> q(bb);
    quantize_row(type, x.data(), q.data(), B, nullptr);
    std::vector<ElementGrid> before(static_cast<size_t>(B)), after(static_cast<size_t>(B));
    block_grids(type, q.data(), before.data());
    std::vector<int> levels(static_cast<size_t>(B)), back(static_cast<size_t>(B));
    for (int64_t e = 0; e < B; ++e)
      levels[static_cast<size_t>(e)] =
          std::uniform_int_distribution<int>(0, before[static_cast<size_t>(e)].n_levels - 1)(rng);
    set_block_levels(type, q.data(), levels.data());
    block_grids(type, q.data(), after.data());
    block_levels(type, q.data(), back.data());
    std::vector<float> deq(static_cast<size_t>(B));
    dequantize_row(type, q.data(), deq.data(), B);
    for (int64_t e = 0; e < B; ++e) {
      const size_t k = static_cast<size_t>(e);
      EXPECT_EQ(bits(after[k].scale), bits(before[k].scale)) << type_name(type);
      EXPECT_EQ(bits(after[k].offset), bits(before[k].offset)) << type_name(type);
      EXPECT_EQ(back[k], levels[k]) << type_name(type) << " element " << e;
      EXPECT_EQ(bits(deq[k]), bits(grid_value(before[k], levels[k]))) << type_name(type) << " element " << e;
    }
  }
}

TEST(BlockGrid, NearestLevelIsNearest) {
  for (TensorType type : kGridTypes) {
    const int64_t B = type_traits(type).block_size;
    const std::vector<float> x = test::gaussian(static_cast<size_t>(B), 5);
    std::vector<uint8_t> q(type_traits(type).block_bytes);
    quantize_row(type, x.data(), q.data(), B, nullptr);
    std::vector<ElementGrid> grids(static_cast<size_t>(B));
    block_grids(type, q.data(), grids.data());
    const std::vector<float> probes = test::gaussian(64, 9, 2.0f);
    for (int64_t e = 0; e < B; e += 7) {
      const ElementGrid& g = grids[static_cast<size_t>(e)];
      for (float p : probes) {
        const int l = nearest_level(g, p);
        double best = 1e30;
        for (int k = 0; k < g.n_levels; ++k) best = std::min(best, std::fabs(double(p) - grid_value(g, k)));
        EXPECT_LE(std::fabs(double(p) - grid_value(g, l)), best + 1e-6) << type_name(type);
      }
      EXPECT_GE(nearest_level(g, std::nanf("")), 0);
    }
  }
  EXPECT_FALSE(has_block_grid(TensorType::F16));
  EXPECT_FALSE(has_block_grid(TensorType::IQ2_XXS));
}

}  // namespace
}  // namespace strata
