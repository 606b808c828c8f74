// The grids of the 1-3-bit IQ types as lattices for the quantizers: each grid entry is a point
// of {level[0], ..., level[m-1]}^dim (dim 8 for IQ2 / IQ1, 4 for IQ3), and the quantizer's inner
// step is "the grid point nearest to a target vector under per-element weights".
//
// The weighted squared distance is separable, so rounding each coordinate to its nearest level
// is the optimum over the full lattice; when that point is on the grid it is the answer. The
// grids are sparse subsets (256 of 6561 points for IQ2_XXS), so for the other lattice points a
// neighbour list is precomputed: the grid points within one step (in level-index units, squared)
// of the nearest ones, at most kMaxNeighbours, and the weighted search runs over that list.
//
// The search is the quantizers' inner loop (millions of calls per tensor), so each list is also
// stored transposed, four candidates at a time ([dim][4] floats, nb_soa), and evaluated four
// lanes wide with the same float operations in the same order per candidate as the one-at-a-time
// loop (nearest_grid_point_reference): the two return the same index and error bit for bit.
#pragma once

#include <cstdint>
#include <vector>

namespace strata::quant {

enum class IqGrid { Iq2xxs, Iq2xs, Iq2s, Iq3xxs, Iq3s, Iq1s };

struct IqLattice {
  static constexpr int kMaxNeighbours = 32;
  int dim = 0;       // elements per grid point: 8 or 4
  int n_levels = 0;  // levels per coordinate
  float level[8] = {};
  int n_grid = 0;
  std::vector<float> grid_value;      // [n_grid, dim] level values of each grid point
  std::vector<int32_t> lattice_grid;  // [n_levels^dim] grid index of a lattice point, or -1
  std::vector<uint32_t> nb_begin;     // [n_levels^dim + 1] into nb
  std::vector<uint16_t> nb;           // neighbour grid indices of the off-grid lattice points
  // The lists again, in quads of 4 candidates, each [dim][4] floats of level values; a list's
  // last quad is padded with its first candidate (a tie with position 0, so never chosen).
  std::vector<uint32_t> nb_soa_begin;  // [n_levels^dim + 1] into nb_soa, in floats
  std::vector<float> nb_soa;           // [sum of quads, dim, 4]
  float mid[7] = {};                   // [n_levels - 1] midpoints between adjacent levels
  float max_level() const { return level[n_levels - 1]; }
};

// Built on first use (thread-safe), from the format tables in quant/iq_tables.h.
const IqLattice& iq_lattice(IqGrid grid);

// The grid point minimising sum(w (u - grid)^2) over the candidates of the lattice point nearest
// to u (the first of least distance in list order). u, w: [dim] (target in level units, weights
// >= 0). Returns the grid index; *err the distance.
int nearest_grid_point(const IqLattice& lat, const float* u, const float* w, float* err);

// nearest_grid_point for n groups: u, w: [n, dim]; k, err: [n].
void nearest_grid_points(const IqLattice& lat, int n, const float* u, const float* w, int* k, float* err);

// The same search one candidate at a time: the reference of nearest_grid_point (tests).
int nearest_grid_point_reference(const IqLattice& lat, const float* u, const float* w, float* err);

}  // namespace strata::quant
