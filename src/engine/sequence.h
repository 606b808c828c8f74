// One generation stream inside the engine: a request has `n` of them (parallel sampling).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/request.h"
#include "engine/stop_matcher.h"
#include "kv/kv_cache_manager.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace strata {

struct RequestState;

enum class SequenceStatus { Waiting, Running, Finished };

struct Sequence {
  RequestState* request = nullptr;
  int32_t index = 0;                 // choice index within the request
  std::vector<int32_t> tokens;       // prompt followed by the generated tokens
  int64_t n_prompt = 0;
  int64_t n_computed = 0;            // leading tokens whose K/V are in the cache
  SequenceStatus status = SequenceStatus::Waiting;
  SequenceKv kv;
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<TokenConstraint> constraint;  // of request->params.constraint; the sampler masks with it
  std::unique_ptr<StreamingDetokenizer> detok;
  std::unique_ptr<StopMatcher> stop;
  uint64_t admitted_order = 0;       // increasing with each admission (preemption picks the max)
  std::optional<Clock::time_point> last_token_time;

  int64_t n_generated() const { return static_cast<int64_t>(tokens.size()) - n_prompt; }
  int64_t n_uncomputed() const { return static_cast<int64_t>(tokens.size()) - n_computed; }
};

// The request a set of sequences belongs to.
struct RequestState {
  RequestId id = 0;
  RequestParams params;
  EventCallback on_event;
  BlockHash prefix_root{};            // model + cache salt
  std::vector<std::unique_ptr<Sequence>> seqs;  // seqs[0] exists from the start; the others fork after prefill
  int32_t n_finished = 0;
  bool aborted = false;
  int64_t cached_prompt_tokens = 0;
  Clock::time_point arrival;
  std::optional<Clock::time_point> first_scheduled;
  std::optional<Clock::time_point> first_token;
};

}  // namespace strata
