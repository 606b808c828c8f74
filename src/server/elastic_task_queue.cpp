#include "server/elastic_task_queue.h"

#include "core/check.h"

namespace strata::server {

ElasticTaskQueue::ElasticTaskQueue(size_t max_threads) : max_threads_(max_threads) {
  STRATA_CHECK(max_threads > 0);
}

ElasticTaskQueue::~ElasticTaskQueue() {
  shutdown();
}

void ElasticTaskQueue::enqueue(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shutdown_) return;
  jobs_.push_back(std::move(fn));
  if (jobs_.size() > idle_ && threads_.size() < max_threads_) threads_.emplace_back([this] { worker(); });
  cv_.notify_one();
}

void ElasticTaskQueue::shutdown() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (std::thread& t : threads) t.join();
}

size_t ElasticTaskQueue::threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_.size();
}

void ElasticTaskQueue::worker() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++idle_;
      cv_.wait(lock, [&] { return shutdown_ || !jobs_.empty(); });
      --idle_;
      if (jobs_.empty()) return;  // shut down and nothing left to run
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace strata::server
