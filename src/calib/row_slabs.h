// The calibration passes (GPTQ, the scale refit, the level descent, SparseGPT) treat a weight
// matrix's rows independently: they run in slabs of a few rows, spread over the pool's workers.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/thread_pool.h"

namespace strata::calib {

// Workers for per-worker accumulators of for_each_row_slab (1 without a pool).
inline int row_slab_workers(const ThreadPool* pool) {
  return pool ? std::max(1, pool->size()) : 1;
}

// f(r0, r1, worker) for the slabs [r0, r1) of `slab` rows covering [0, n_rows); worker is below
// row_slab_workers(pool). Serial without a pool, with one thread, or for a single slab.
template <class F>
void for_each_row_slab(ThreadPool* pool, int64_t n_rows, int64_t slab, F&& f) {
  const int64_t n_tasks = (n_rows + slab - 1) / slab;
  auto run = [&](int64_t t0, int64_t t1, int worker) {
    for (int64_t t = t0; t < t1; ++t) f(t * slab, std::min(n_rows, (t + 1) * slab), worker);
  };
  if (pool && pool->size() > 1 && n_tasks > 1)
    pool->parallel_for(n_tasks, 1, [&](int64_t b, int64_t e, int worker) { run(b, e, worker); });
  else
    run(0, n_tasks, 0);
}

}  // namespace strata::calib
