#include "calib/level_descent.h"

#include <algorithm>
#include <vector>

#include "calib/damped_hessian.h"
#include "calib/row_slabs.h"
#include "core/check.h"
#include "core/thread_pool.h"
#include "quant/block_grid.h"
#include "quant/quantize.h"

namespace strata::calib {
namespace {

constexpr int64_t kRowsPerTask = 8;
// A move must lower the error by more than this fraction of it: float round-off in g cannot
// then make two elements trade places forever.
constexpr double kMinGain = 1e-12;

struct Problem {
  TensorType type;
  int64_t n_in, block, n_blocks;
  size_t row_bytes, block_bytes;
  const float* w;        // [n_out, n_in]
  std::vector<float> H;  // [n_in, n_in] damped
  int max_sweeps;
  uint8_t* q;  // [n_out] rows of type
};

// Workspace of one row.
struct Row {
  std::vector<ElementGrid> grids;  // [n_in]
  std::vector<int> levels;         // [n_in]
  std::vector<double> v, g;        // [n_in] current values; H (v - w)
};

void descend_row(const Problem& p, int64_t r, Row& s, LevelDescentReport* rep) {
  const int64_t n = p.n_in, B = p.block;
  uint8_t* row = p.q + static_cast<size_t>(r) * p.row_bytes;
  const float* w = p.w + r * n;
  for (int64_t b = 0; b < p.n_blocks; ++b) {
    const uint8_t* blk = row + static_cast<size_t>(b) * p.block_bytes;
    block_grids(p.type, blk, s.grids.data() + b * B);
    block_levels(p.type, blk, s.levels.data() + b * B);
  }
  for (int64_t i = 0; i < n; ++i) s.v[i] = grid_value(s.grids[i], s.levels[i]);
  std::fill(s.g.begin(), s.g.end(), 0.0);
  double loss = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double e = s.v[i] - w[i];
    if (e == 0) continue;
    const float* h = p.H.data() + i * n;  // H is symmetric: row i is column i
    for (int64_t k = 0; k < n; ++k) s.g[k] += e * h[k];
  }
  for (int64_t i = 0; i < n; ++i) loss += (s.v[i] - w[i]) * s.g[i];
  rep->error_before += loss;

  bool changed_any = false;
  for (int sweep = 0; sweep < p.max_sweeps; ++sweep) {
    int64_t moves = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float* h = p.H.data() + i * n;
      const double hii = h[i];
      if (!(hii > 0)) continue;
      const ElementGrid& gr = s.grids[i];
      const int l = nearest_level(gr, static_cast<float>(s.v[i] - s.g[i] / hii));
      if (l == s.levels[i]) continue;
      const double delta = static_cast<double>(grid_value(gr, l)) - s.v[i];
      const double change = 2.0 * delta * s.g[i] + delta * delta * hii;
      if (!(change < -kMinGain * loss)) continue;
      s.levels[i] = l;
      s.v[i] += delta;
      for (int64_t k = 0; k < n; ++k) s.g[k] += delta * h[k];
      loss += change;
      ++moves;
    }
    rep->moves += moves;
    changed_any = changed_any || moves > 0;
    if (moves == 0) break;
  }
  if (changed_any)
    for (int64_t b = 0; b < p.n_blocks; ++b)
      set_block_levels(p.type, row + static_cast<size_t>(b) * p.block_bytes, s.levels.data() + b * B);
  rep->error_after += loss;
  ++rep->rows;
}

}  // namespace

LevelDescentReport descend_levels(TensorType type, const float* w, int64_t n_out, int64_t n_in,
                                  const float* gram, double damp, int max_sweeps, void* q, ThreadPool* pool) {
  STRATA_CHECK(has_block_grid(type) && n_out > 0 && damp >= 0 && max_sweeps >= 0);
  Problem p;
  p.type = type;
  p.block = type_traits(type).block_size;
  STRATA_CHECK(n_in % p.block == 0);
  p.n_in = n_in;
  p.n_blocks = n_in / p.block;
  p.row_bytes = row_bytes(type, n_in);
  p.block_bytes = type_traits(type).block_bytes;
  p.w = w;
  p.H = damped_hessian(gram, n_in, damp);
  p.max_sweeps = max_sweeps;
  p.q = static_cast<uint8_t*>(q);

  std::vector<LevelDescentReport> per(static_cast<size_t>(row_slab_workers(pool)));
  for_each_row_slab(pool, n_out, kRowsPerTask, [&](int64_t r0, int64_t r1, int worker) {
    const auto N = static_cast<size_t>(n_in);
    Row s{std::vector<ElementGrid>(N), std::vector<int>(N), std::vector<double>(N), std::vector<double>(N)};
    for (int64_t r = r0; r < r1; ++r) descend_row(p, r, s, &per[static_cast<size_t>(worker)]);
  });
  LevelDescentReport total;
  for (const LevelDescentReport& r : per) {
    total.rows += r.rows;
    total.moves += r.moves;
    total.error_before += r.error_before;
    total.error_after += r.error_after;
  }
  return total;
}

}  // namespace strata::calib
