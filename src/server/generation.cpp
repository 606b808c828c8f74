#include "server/generation.h"

#include <condition_variable>
#include <deque>
#include <mutex>

#include "server/api_error.h"

namespace strata::server {

// Outlives the Generation when the engine still holds a callback (it is captured by value).
struct Generation::Shared {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Event> queue;
  std::vector<bool> done;  // [n_prompts] request_done seen
  size_t n_done = 0;
  Usage usage;
};

Generation::Generation(Engine& engine, const GenerationRequest& req)
    : engine_(engine), shared_(std::make_shared<Shared>()) {
  shared_->done.assign(req.prompts.size(), false);
  const int32_t n = req.params.n;
  for (size_t p = 0; p < req.prompts.size(); ++p) {
    RequestParams params = req.params;
    params.prompt = req.prompts[p].tokens;
    EventCallback on_event = [shared = shared_, p, n](const EngineEvent& ev) {
      {
        std::lock_guard<std::mutex> lock(shared->mu);
        shared->queue.push_back({static_cast<int32_t>(p) * n + ev.index, ev});
        if (ev.request_done && !shared->done[p]) {
          shared->done[p] = true;
          ++shared->n_done;
          shared->usage.prompt_tokens += ev.usage.prompt_tokens;
          shared->usage.completion_tokens += ev.usage.completion_tokens;
          shared->usage.cached_prompt_tokens += ev.usage.cached_prompt_tokens;
          shared->usage.draft_tokens += ev.usage.draft_tokens;
          shared->usage.accepted_draft_tokens += ev.usage.accepted_draft_tokens;
        }
      }
      shared->cv.notify_one();
    };
    SubmitResult r;
    try {
      r = engine_.submit(std::move(params), std::move(on_event));
    } catch (const Error& e) {
      abort();
      throw bad_request(e.what());
    }
    if (r.status != SubmitStatus::Accepted) {
      abort();
      if (r.status == SubmitStatus::QueueFull) throw queue_full();
      throw unavailable("The server is shutting down.");
    }
    ids_.push_back(r.id);
  }
}

Generation::~Generation() {
  abort();
}

void Generation::abort() {
  std::vector<RequestId> unfinished;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    for (size_t p = 0; p < ids_.size(); ++p)
      if (!shared_->done[p]) unfinished.push_back(ids_[p]);
  }
  for (RequestId id : unfinished) engine_.abort(id);
}

std::vector<Generation::Event> Generation::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(shared_->mu);
  shared_->cv.wait_for(lock, timeout, [&] { return !shared_->queue.empty(); });
  std::vector<Event> out(std::make_move_iterator(shared_->queue.begin()),
                         std::make_move_iterator(shared_->queue.end()));
  shared_->queue.clear();
  return out;
}

bool Generation::finished() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->n_done == shared_->done.size() && shared_->queue.empty();
}

Usage Generation::usage() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->usage;
}

}  // namespace strata::server
