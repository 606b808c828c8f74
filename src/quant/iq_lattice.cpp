#include "quant/iq_lattice.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
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

// The transposed copy of the neighbour lists (IqLattice::nb_soa).
void build_quads(IqLattice& lat, int n_lattice) {
  lat.nb_soa_begin.assign(n_lattice + 1, 0);
  for (int p = 0; p < n_lattice; ++p) {
    lat.nb_soa_begin[p] = static_cast<uint32_t>(lat.nb_soa.size());
    const uint32_t b = lat.nb_begin[p], n = lat.nb_begin[p + 1] - b;
    const int on_grid = lat.lattice_grid[p];
    for (uint32_t q = 0; q < std::max(n, 1u); q += 4)
      for (int j = 0; j < lat.dim; ++j)
        for (uint32_t i = q; i < q + 4; ++i) {
          const int k = on_grid >= 0 ? on_grid : lat.nb[b + (i < n ? i : 0)];
          lat.nb_soa.push_back(lat.grid_value[static_cast<size_t>(k) * lat.dim + j]);
        }
  }
  lat.nb_soa_begin[n_lattice] = static_cast<uint32_t>(lat.nb_soa.size());
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
  for (int i = 0; i + 1 < lat.n_levels; ++i) lat.mid[i] = 0.5f * (lat.level[i] + lat.level[i + 1]);
  // Neighbour lists of the off-grid lattice points, nearest first (ties: lower grid index): the
  // points within one step of the nearest distance, sorted, the first kMaxNeighbours kept.
  lat.nb_begin.assign(n_lattice + 1, 0);
  std::vector<int> dist(s.n_grid);        // squared index distance per grid point
  std::vector<std::pair<int, int>> near;  // (distance, grid index) within the limit
  int digits[8];
  for (int p = 0; p < n_lattice; ++p) {
    lat.nb_begin[p] = static_cast<uint32_t>(lat.nb.size());
    if (lat.lattice_grid[p] >= 0) continue;
    for (int j = 0, q = p; j < s.dim; ++j, q /= lat.n_levels) digits[j] = q % lat.n_levels;
    int d_min = INT32_MAX;
    for (int k = 0; k < s.n_grid; ++k) {
      int d = 0;
      for (int j = 0; j < s.dim; ++j) {
        const int e = digits[j] - grid_idx[k * s.dim + j];
        d += e * e;
      }
      dist[k] = d;
      d_min = std::min(d_min, d);
    }
    near.clear();
    for (int k = 0; k < s.n_grid; ++k)
      if (dist[k] <= d_min + 1) near.emplace_back(dist[k], k);
    std::sort(near.begin(), near.end());
    for (size_t k = 0; k < near.size() && k < IqLattice::kMaxNeighbours; ++k)
      lat.nb.push_back(static_cast<uint16_t>(near[k].second));
  }
  lat.nb_begin[n_lattice] = static_cast<uint32_t>(lat.nb.size());
  build_quads(lat, n_lattice);
  return lat;
}

// Index of the level nearest to v (levels sorted ascending; ties to the lower).
inline int nearest_level_index(const IqLattice& lat, float v) {
  int i = 0;
  while (i + 1 < lat.n_levels && v > 0.5f * (lat.level[i] + lat.level[i + 1])) ++i;
  return i;
}

inline float grid_distance(const IqLattice& lat, int k, const float* u, const float* w) {
  const float* v = lat.grid_value.data() + static_cast<size_t>(k) * lat.dim;
  float d = 0;
  for (int j = 0; j < lat.dim; ++j) d += w[j] * (u[j] - v[j]) * (u[j] - v[j]);
  return d;
}

// Four lanes of floats / ints (GCC vector extensions: SSE2 on x86-64, NEON on aarch64).
typedef float F4 __attribute__((vector_size(16)));
typedef int32_t I4 __attribute__((vector_size(16)));

// nearest_grid_point_reference four lanes wide, for grids of kDim elements and kLevels levels.
// The lattice point: per element the number of midpoints below it (they ascend, so this is the
// index the reference's loop stops at).
template <int kDim, int kLevels>
inline int lattice_point(const IqLattice& lat, const float* u) {
  int id = 0;
  for (int h = kDim / 4 - 1; h >= 0; --h) {
    F4 uq;
    std::memcpy(&uq, u + 4 * h, sizeof uq);
    I4 digit = {0, 0, 0, 0};
    for (int m = 0; m + 1 < kLevels; ++m) digit -= uq > lat.mid[m];
    for (int j = 3; j >= 0; --j) id = id * kLevels + digit[j];
  }
  return id;
}

// The candidates of lattice point id (an on-grid point's list is itself), four at a time: per
// lane the first least distance in list order (strict <), then the least over the lanes, the
// lowest list position among equals. Exact as the reference when every distance is a number,
// i.e. when u and w are finite.
template <int kDim>
inline int search_point(const IqLattice& lat, int id, const float* u, const float* w, float* err) {
  F4 uj[kDim], wj[kDim];
  for (int j = 0; j < kDim; ++j) uj[j] = F4{u[j], u[j], u[j], u[j]}, wj[j] = F4{w[j], w[j], w[j], w[j]};
  const float* q = lat.nb_soa.data() + lat.nb_soa_begin[id];
  const float* q_end = lat.nb_soa.data() + lat.nb_soa_begin[id + 1];
  F4 best = {INFINITY, INFINITY, INFINITY, INFINITY};
  I4 best_pos = {0, 0, 0, 0}, pos = {0, 1, 2, 3};
  for (; q < q_end; q += 4 * kDim, pos += 4) {
    F4 d = {0, 0, 0, 0};
    for (int j = 0; j < kDim; ++j) {
      F4 v;
      std::memcpy(&v, q + 4 * j, sizeof v);
      const F4 e = uj[j] - v;
      d = d + wj[j] * e * e;
    }
    const I4 less = d < best;
    best = less ? d : best;
    best_pos = less ? pos : best_pos;
  }
  // The least distance in every lane, then the least position holding it.
  F4 m = best;
  F4 m2 = __builtin_shufflevector(m, m, 1, 0, 3, 2);
  m = m2 < m ? m2 : m;
  m2 = __builtin_shufflevector(m, m, 2, 3, 0, 1);
  m = m2 < m ? m2 : m;
  const I4 kNone = {INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX};
  I4 key = best == m ? best_pos : kNone;
  I4 key2 = __builtin_shufflevector(key, key, 1, 0, 3, 2);
  key = key2 < key ? key2 : key;
  key2 = __builtin_shufflevector(key, key, 2, 3, 0, 1);
  key = key2 < key ? key2 : key;
  *err = m[0];
  const int on_grid = lat.lattice_grid[id];
  return on_grid >= 0 ? on_grid : lat.nb[lat.nb_begin[id] + key[0]];
}

// n groups; the reference for all of them when any value is not a number or infinite (its
// one-at-a-time order decides which NaN distance wins).
template <int kDim, int kLevels>
void search_groups(const IqLattice& lat, int n, const float* u, const float* w, int* k, float* err) {
  I4 bad = {0, 0, 0, 0};
  for (int i = 0; i < n * kDim; i += 4) {
    F4 uq, wq;
    std::memcpy(&uq, u + i, sizeof uq);
    std::memcpy(&wq, w + i, sizeof wq);
    bad |= (uq - uq != 0) | (wq - wq != 0);
  }
  if (bad[0] | bad[1] | bad[2] | bad[3]) {
    for (int g = 0; g < n; ++g) k[g] = nearest_grid_point_reference(lat, u + g * kDim, w + g * kDim, err + g);
    return;
  }
  for (int g = 0; g < n; ++g)
    k[g] = search_point<kDim>(lat, lattice_point<kDim, kLevels>(lat, u + g * kDim), u + g * kDim,
                              w + g * kDim, err + g);
}

}  // namespace

const IqLattice& iq_lattice(IqGrid grid) {
  static IqLattice lattices[6];
  static std::once_flag once[6];
  const int i = static_cast<int>(grid);
  std::call_once(once[i], [&] { lattices[i] = build(grid); });
  return lattices[i];
}

int nearest_grid_point_reference(const IqLattice& lat, const float* u, const float* w, float* err) {
  int id = 0;
  for (int j = lat.dim - 1; j >= 0; --j) id = id * lat.n_levels + nearest_level_index(lat, u[j]);
  const int on_grid = lat.lattice_grid[id];
  if (on_grid >= 0) {
    *err = grid_distance(lat, on_grid, u, w);
    return on_grid;
  }
  int best = -1;
  float best_err = 0;
  for (uint32_t i = lat.nb_begin[id]; i < lat.nb_begin[id + 1]; ++i) {
    const float d = grid_distance(lat, lat.nb[i], u, w);
    if (best < 0 || d < best_err) best = lat.nb[i], best_err = d;
  }
  *err = best_err;
  return best;
}

void nearest_grid_points(const IqLattice& lat, int n, const float* u, const float* w, int* k, float* err) {
  if (lat.dim == 8) {
    STRATA_CHECK(lat.n_levels == 3, "8-element grids have 3 levels");
    search_groups<8, 3>(lat, n, u, w, k, err);
  } else {
    STRATA_CHECK(lat.dim == 4 && lat.n_levels == 8, "4-element grids have 8 levels");
    search_groups<4, 8>(lat, n, u, w, k, err);
  }
}

int nearest_grid_point(const IqLattice& lat, const float* u, const float* w, float* err) {
  int k;
  nearest_grid_points(lat, 1, u, w, &k, err);
  return k;
}

}  // namespace strata::quant
