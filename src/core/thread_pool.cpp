#include "core/thread_pool.h"

#include <sched.h>

#include <algorithm>

#include "core/check.h"
#include "core/spin_wait.h"

namespace strata {
namespace {

// Iterations a worker spins before sleeping. Long enough to bridge the gap between two
// matmuls of one decode step, short enough not to burn a core when the engine is idle.
// Past the first few thousand, each iteration yields the core (see spin_wait.h).
constexpr int kSpinIterations = 1 << 14;

}  // namespace

int default_thread_count() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads > 0 ? n_threads : default_thread_count()) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int ith) {
  uint32_t seen = 0;
  for (;;) {
    uint32_t gen = generation_.load(std::memory_order_acquire);
    for (int spin = 0; gen == seen && spin < kSpinIterations; ++spin) {
      if (spin < 2048)
        cpu_relax();
      else
        sched_yield();
      gen = generation_.load(std::memory_order_acquire);
    }
    while (gen == seen) {
      generation_.wait(seen, std::memory_order_acquire);
      gen = generation_.load(std::memory_order_acquire);
    }
    seen = gen;
    if (stop_.load()) return;
    (*job_)(ith, n_threads_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
  if (n_threads_ == 1) {
    fn(0, 1);
    return;
  }
  job_ = &fn;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  fn(0, n_threads_);
  spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; });
  job_ = nullptr;
}

void ThreadPool::parallel_for(int64_t n, int64_t grain,
                              const std::function<void(int64_t, int64_t, int)>& fn) {
  if (n <= 0) return;
  STRATA_CHECK(grain > 0);
  if (n_threads_ == 1 || n <= grain) {
    fn(0, n, 0);
    return;
  }
  std::atomic<int64_t> next{0};
  run([&](int ith, int) {
    for (;;) {
      const int64_t begin = next.fetch_add(grain, std::memory_order_relaxed);
      if (begin >= n) break;
      fn(begin, std::min(n, begin + grain), ith);
    }
  });
}

}  // namespace strata
