// cpp-httplib's connection task queue, growing with demand up to a limit.
//
// Each request occupies a connection thread while its generation runs (waiting on the engine,
// never computing), so the server needs about as many threads as requests it admits — running
// plus queued. httplib's own pool has a fixed size chosen at compile time; this one starts
// empty, creates a thread whenever work arrives and none is idle, and reuses idle ones.
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::server {

class ElasticTaskQueue : public httplib::TaskQueue {
 public:
  explicit ElasticTaskQueue(size_t max_threads);
  ~ElasticTaskQueue() override;

  void enqueue(std::function<void()> fn) override;
  // Runs what is queued, then joins every thread.
  void shutdown() override;

  size_t threads() const;

 private:
  void worker();

  const size_t max_threads_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool shutdown_ = false;
};

}  // namespace strata::server
