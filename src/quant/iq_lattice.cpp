#include "quant/iq_lattice.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "core/check.h"
#include "quant/iq_tables.h"

namespace strata::quant {
namespace {

// Element j of grid entry k as a signed byte value.
int grid_byte(IqGrid g, int k, int j) {
  switch (g) {
    case IqGrid::Iq2xxs:
      return static_cast<int>((kIq2xxsGrid[k] >> (8 * j)) & 0xFF);
    case IqGrid::Iq2xs:
      return static_cast<int>((kIq2xsGrid[k] >> (8 * j)) & 0xFF);
    case IqGrid::Iq2s:
      return static_cast<int>((kIq2sGrid[k] >> (8 * j)) & 0xFF);
    case IqGrid::Iq3xxs:
      return static_cast<int>((kIq3xxsGrid[k] >> (8 * j)) & 0xFF);
    case IqGrid::Iq3s:
      return static_cast<int>((kIq3sGrid[k] >> (8 * j)) & 0xFF);
    case IqGrid::Iq1s:
      return static_cast<int8_t>((kIq1sGrid[k] >> (8 * j)) & 0xFF);
  }
  return 0;
}

struct GridShape {
  int n_grid, dim;
  std::vector<int> levels;
};

GridShape shape_of(IqGrid g) {
  switch (g) {
    case IqGrid::Iq2xxs:
      return {256, 8, {8, 25, 43}};
    case IqGrid::Iq2xs:
      return {512, 8, {8, 25, 43}};
    case IqGrid::Iq2s:
      return {1024, 8, {8, 25, 43}};
    case IqGrid::Iq3xxs:
      return {256, 4, {4, 12, 20, 28, 36, 44, 52, 62}};
    case IqGrid::Iq3s:
      return {512, 4, {1, 3, 5, 7, 9, 11, 13, 15}};
    case IqGrid::Iq1s:
      return {2048, 8, {-1, 0, 1}};
  }
  return {};
}

// Lattice point index: level index of element j in base n_levels digit j.
IqLattice build(IqGrid g) {
  const GridShape s = shape_of(g);
  IqLattice lat;
  lat.dim = s.dim;
  lat.n_levels = static_cast<int>(s.levels.size());
  for (int i = 0; i < lat.n_levels; ++i) lat.level[i] = static_cast<float>(s.levels[i]);
  lat.n_grid = s.n_grid;
  int n_lattice = 1;
  for (int j = 0; j < s.dim; ++j) n_lattice *= lat.n_levels;
  lat.lattice_grid.assign(n_lattice, -1);
  lat.grid_value.resize(static_cast<size_t>(s.n_grid) * s.dim);
  std::vector<uint8_t> grid_idx(static_cast<size_t>(s.n_grid) * s.dim);  // [n_grid, dim] level indices
  for (int k = 0; k < s.n_grid; ++k) {
    int id = 0;
    for (int j = s.dim - 1; j >= 0; --j) {
      const int v = grid_byte(g, k, j);
      const auto it = std::find(s.levels.begin(), s.levels.end(), v);
      STRATA_CHECK(it != s.levels.end(), "grid value ", v, " is not a level");
      const int li = static_cast<int>(it - s.levels.begin());
      grid_idx[k * s.dim + j] = static_cast<uint8_t>(li);
      lat.grid_value[k * s.dim + j] = static_cast<float>(v);
      id = id * lat.n_levels + li;
    }
    lat.lattice_grid[id] = k;
  }
  // Neighbour lists of the off-grid lattice points, nearest first (ties: lower grid index).
  lat.nb_begin.assign(n_lattice + 1, 0);
  std::vector<std::pair<int, int>> dist(s.n_grid);  // (squared index distance, grid index)
  int digits[8];
  for (int p = 0; p < n_lattice; ++p) {
    lat.nb_begin[p] = static_cast<uint32_t>(lat.nb.size());
    if (lat.lattice_grid[p] >= 0) continue;
    for (int j = 0, q = p; j < s.dim; ++j, q /= lat.n_levels) digits[j] = q % lat.n_levels;
    for (int k = 0; k < s.n_grid; ++k) {
      int d = 0;
      for (int j = 0; j < s.dim; ++j) {
        const int e = digits[j] - grid_idx[k * s.dim + j];
        d += e * e;
      }
      dist[k] = {d, k};
    }
    std::sort(dist.begin(), dist.end());
    const int limit = dist[0].first + 1;
    for (int k = 0; k < s.n_grid && k < IqLattice::kMaxNeighbours && dist[k].first <= limit; ++k)
      lat.nb.push_back(static_cast<uint16_t>(dist[k].second));
  }
  lat.nb_begin[n_lattice] = static_cast<uint32_t>(lat.nb.size());
  return lat;
}

// Index of the level nearest to v (levels sorted ascending; ties to the lower).
inline int nearest_level_index(const IqLattice& lat, float v) {
  int i = 0;
  while (i + 1 < lat.n_levels && v > 0.5f * (lat.level[i] + lat.level[i + 1])) ++i;
  return i;
}

}  // namespace

const IqLattice& iq_lattice(IqGrid grid) {
  static IqLattice lattices[6];
  static std::once_flag once[6];
  const int i = static_cast<int>(grid);
  std::call_once(once[i], [&] { lattices[i] = build(grid); });
  return lattices[i];
}

int nearest_grid_point(const IqLattice& lat, const float* u, const float* w, float* err) {
  int id = 0;
  for (int j = lat.dim - 1; j >= 0; --j) id = id * lat.n_levels + nearest_level_index(lat, u[j]);
  const int on_grid = lat.lattice_grid[id];
  auto dist = [&](int k) {
    const float* v = lat.grid_value.data() + static_cast<size_t>(k) * lat.dim;
    float d = 0;
    for (int j = 0; j < lat.dim; ++j) d += w[j] * (u[j] - v[j]) * (u[j] - v[j]);
    return d;
  };
  if (on_grid >= 0) {
    *err = dist(on_grid);
    return on_grid;
  }
  int best = -1;
  float best_err = 0;
  for (uint32_t i = lat.nb_begin[id]; i < lat.nb_begin[id + 1]; ++i) {
    const float d = dist(lat.nb[i]);
    if (best < 0 || d < best_err) best = lat.nb[i], best_err = d;
  }
  *err = best_err;
  return best;
}

}  // namespace strata::quant
