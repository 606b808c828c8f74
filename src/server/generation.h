// One client request running on the engine: an engine request per prompt, their events
// queued in arrival order for the HTTP thread, aborts for whatever is left unfinished.
//
// The engine calls back on its own thread; the callback only appends to a queue under a short
// lock and notifies, so a slow or stalled client never holds up the engine loop.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/engine.h"
#include "server/generation_request.h"

namespace strata::server {

class Generation {
 public:
  struct Event {
    int32_t index;  // choice number in the answer: prompt * n + engine choice
    EngineEvent event;
  };

  // Submits every prompt. Throws ApiError: 400 when the engine rejects the parameters, 429 when
  // its queue is full, 503 when it is shutting down (prompts already submitted are aborted).
  Generation(Engine& engine, const GenerationRequest& req);
  ~Generation();  // aborts every engine request that has not finished
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  // Waits up to `timeout` for events and takes all that are queued (none on timeout).
  std::vector<Event> wait(std::chrono::milliseconds timeout);
  // Every engine request finished and every event taken.
  bool finished() const;
  // Usage summed over the engine requests (complete once finished()).
  Usage usage() const;
  // Aborts the unfinished engine requests (their blocks are freed before the next step).
  void abort();

 private:
  struct Shared;
  Engine& engine_;
  std::vector<RequestId> ids_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace strata::server
