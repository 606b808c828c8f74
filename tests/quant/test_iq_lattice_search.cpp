// The lattice search of the 1-3-bit IQ quantizers (quant/iq_lattice.h): the neighbour lists
// against their definition, computed here by brute force from the grid tables, and the
// four-lanes-wide search against the one-candidate-at-a-time reference, bit for bit (index and
// error), on random targets and on the ties and non-numbers that decide between equal distances.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "quant/iq_lattice.h"

namespace strata::test {
namespace {

using quant::IqGrid;
using quant::IqLattice;

const IqGrid kGrids[] = {IqGrid::Iq2xxs, IqGrid::Iq2xs, IqGrid::Iq2s,
                         IqGrid::Iq3xxs, IqGrid::Iq3s,  IqGrid::Iq1s};

// Level index of each element of grid point k.
std::vector<int> level_indices(const IqLattice& lat, int k) {
  std::vector<int> idx(lat.dim);
  for (int j = 0; j < lat.dim; ++j) {
    const float v = lat.grid_value[k * lat.dim + j];
    idx[j] = static_cast<int>(std::find(lat.level, lat.level + lat.n_levels, v) - lat.level);
  }
  return idx;
}

// Definition (iq_lattice.h): the grid points within one squared index step of the nearest,
// nearest first, ties to the lower index, at most kMaxNeighbours; none for on-grid points.
TEST(IqLatticeSearch, NeighbourListsMatchBruteForce) {
  std::mt19937 rng(5);
  for (IqGrid g : kGrids) {
    const IqLattice& lat = quant::iq_lattice(g);
    const int n_lattice = static_cast<int>(lat.lattice_grid.size());
    std::vector<std::vector<int>> grid_idx(lat.n_grid);
    for (int k = 0; k < lat.n_grid; ++k) grid_idx[k] = level_indices(lat, k);
    for (int trial = 0; trial < 300; ++trial) {
      const int p = std::uniform_int_distribution<int>(0, n_lattice - 1)(rng);
      std::vector<int> digit(lat.dim);
      for (int j = 0, q = p; j < lat.dim; ++j, q /= lat.n_levels) digit[j] = q % lat.n_levels;
      std::vector<std::pair<int, int>> all;
      for (int k = 0; k < lat.n_grid; ++k) {
        int d = 0;
        for (int j = 0; j < lat.dim; ++j) d += (digit[j] - grid_idx[k][j]) * (digit[j] - grid_idx[k][j]);
        all.emplace_back(d, k);
      }
      std::sort(all.begin(), all.end());
      std::vector<int> want;
      if (all[0].first > 0) {
        for (const auto& [d, k] : all)
          if (d <= all[0].first + 1 && want.size() < IqLattice::kMaxNeighbours) want.push_back(k);
      }
      ASSERT_EQ(lat.lattice_grid[p] >= 0, all[0].first == 0);
      if (lat.lattice_grid[p] >= 0) {
        ASSERT_EQ(lat.lattice_grid[p], all[0].second);
      }
      const std::vector<int> got(lat.nb.begin() + lat.nb_begin[p], lat.nb.begin() + lat.nb_begin[p + 1]);
      ASSERT_EQ(got, want) << "grid " << static_cast<int>(g) << " lattice point " << p;
    }
  }
}

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// One target: levels, midpoints between them (ties of the rounding), values beyond the ends,
// random values; weights random, sometimes 0 or equal (ties of the distance).
void random_target(const IqLattice& lat, std::mt19937& rng, float* u, float* w) {
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  const float lo = lat.level[0] - 2, hi = lat.level[lat.n_levels - 1] + 2;
  const bool equal_w = unit(rng) < 0.2f;
  for (int j = 0; j < lat.dim; ++j) {
    const float r = unit(rng);
    const int i = std::uniform_int_distribution<int>(0, lat.n_levels - 1)(rng);
    if (r < 0.15f)
      u[j] = lat.level[i];
    else if (r < 0.3f && i + 1 < lat.n_levels)
      u[j] = 0.5f * (lat.level[i] + lat.level[i + 1]);
    else
      u[j] = lo + (hi - lo) * unit(rng);
    w[j] = equal_w ? 1.0f : unit(rng) < 0.1f ? 0.0f : unit(rng);
  }
}

TEST(IqLatticeSearch, FourLanesMatchReferenceBitForBit) {
  std::mt19937 rng(9);
  for (IqGrid g : kGrids) {
    const IqLattice& lat = quant::iq_lattice(g);
    for (int trial = 0; trial < 20000; ++trial) {
      float u[8], w[8], e_ref, e;
      random_target(lat, rng, u, w);
      const int k_ref = quant::nearest_grid_point_reference(lat, u, w, &e_ref);
      const int k = quant::nearest_grid_point(lat, u, w, &e);
      ASSERT_EQ(k, k_ref) << "grid " << static_cast<int>(g) << " trial " << trial;
      ASSERT_TRUE(same_bits(e, e_ref)) << e << " vs " << e_ref;
    }
  }
}

// The batch form: each group as alone, also when one group has a NaN or an infinity (the whole
// batch then takes the reference path).
TEST(IqLatticeSearch, BatchMatchesSingleCalls) {
  std::mt19937 rng(13);
  const float kOdd[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                        -std::numeric_limits<float>::infinity()};
  for (IqGrid g : kGrids) {
    const IqLattice& lat = quant::iq_lattice(g);
    for (int trial = 0; trial < 400; ++trial) {
      const int n = 1 + trial % 8;
      float u[64], w[64], e[8];
      int k[8];
      for (int i = 0; i < n; ++i) random_target(lat, rng, u + i * lat.dim, w + i * lat.dim);
      if (trial % 4 == 3) {
        const int at = std::uniform_int_distribution<int>(0, n * lat.dim - 1)(rng);
        (trial % 8 == 3 ? u : w)[at] = kOdd[trial % 3];
      }
      quant::nearest_grid_points(lat, n, u, w, k, e);
      for (int i = 0; i < n; ++i) {
        float e_ref;
        const int k_ref = quant::nearest_grid_point_reference(lat, u + i * lat.dim, w + i * lat.dim, &e_ref);
        ASSERT_EQ(k[i], k_ref) << "grid " << static_cast<int>(g) << " trial " << trial << " group " << i;
        ASSERT_TRUE(same_bits(e[i], e_ref)) << e[i] << " vs " << e_ref;
      }
    }
  }
}

}  // namespace
}  // namespace strata::test
