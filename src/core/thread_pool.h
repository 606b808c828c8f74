// Persistent worker threads for the compute kernels.
//
// Decode calls the pool a few hundred times per token, so dispatch must cost microseconds:
// workers spin briefly on an atomic generation counter before sleeping on it (futex wait).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace strata {

class ThreadPool {
 public:
  // n_threads counts the calling thread; 0 means "all hardware threads".
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Runs fn(ith, nth) once on every thread (the caller is ith = 0) and waits for all.
  // Not reentrant: fn must not call back into the same pool.
  void run(const std::function<void(int ith, int nth)>& fn);

  // Splits [0, n) into chunks of `grain` handed out dynamically; fn(begin, end, ith).
  void parallel_for(int64_t n, int64_t grain,
                    const std::function<void(int64_t begin, int64_t end, int ith)>& fn);

 private:
  void worker_loop(int ith);

  int n_threads_;
  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  alignas(64) std::atomic<uint32_t> generation_{0};  // 32-bit: futex-native wait
  alignas(64) std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
};

// Number of threads to use by default: the physical cores available to this process.
int default_thread_count();

}  // namespace strata
