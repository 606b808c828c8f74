// One generation stream inside the engine: a request has `n` of them (parallel sampling).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/request.h"
#include "engine/spec/spec_controller.h"
#include "engine/stop_matcher.h"
#include "kv/kv_cache_manager.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace strata {

struct RequestState;

enum class SequenceStatus { Waiting, Running, Finished };

struct Sequence {
  uint64_t uid = 0;  // unique in the engine (drafter state key)
  RequestState* request = nullptr;
  int32_t index = 0;            // choice index within the request
  std::vector<int32_t> tokens;  // prompt followed by the generated tokens
  int64_t n_prompt = 0;
  int64_t n_computed = 0;          // leading tokens whose K/V are in the cache
  int64_t prompt_logits_sent = 0;  // prompt rows [.., this) already delivered (survives preemption)
  SequenceStatus status = SequenceStatus::Waiting;
  SequenceKv kv;
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<StreamingDetokenizer> detok;
  std::unique_ptr<StopMatcher> stop;
  std::unique_ptr<TokenConstraint> constraint;  // structured output, or null
  // Speculative decoding: drafts wanted before scheduling, the proposal of this step (never in
  // `tokens` until accepted) with the distributions of sampled drafts, and the acceptance so far.
  int32_t spec_k = 0;
  // Draft positions asked of the drafter this step; positions it left empty (p_min, no match)
  // count against the acceptance, so a drafter that rarely proposes stops being asked.
  int32_t draft_asked = 0;
  std::vector<int32_t> draft;
  std::vector<TokenDistribution> draft_q;
  SpecAcceptance acceptance;
  int64_t n_drafted = 0, n_draft_accepted = 0, n_draft_rounds = 0;
  uint64_t admitted_order = 0;  // increasing with each admission (preemption picks the max)
  std::optional<Clock::time_point> last_token_time;
  std::unique_ptr<EmbeddingPool> pool;  // embedding requests: the pooled hidden rows so far
  // Score-based eviction (kv/kv_evict_policy.h): the cache is compacted once the first evict_at
  // tokens are computed (0: never), from attention scores accumulated per cache slot:
  // evict_scores [n_layer, n_head_kv, evict_keys] (snapkv: the observation window's, evict_keys
  // = evict_at; h2o: every query's). evict_track (h2o): scoring goes on after the prompt, and
  // the cache is compacted again during generation; evict_pos then has evict_scores' layout and
  // holds each slot's original position.
  int64_t evict_at = 0;
  int64_t evict_from = 0;  // the first position whose query is scored: the prefix cache stops there
  bool evict_track = false;
  int64_t evict_keys = 0;
  std::vector<float> evict_scores;
  std::vector<int32_t> evict_pos;
  bool evict_pending() const { return evict_at > 0 && kv.pos_offset == 0 && n_computed < evict_at; }

  int64_t n_generated() const { return static_cast<int64_t>(tokens.size()) - n_prompt; }
  int64_t n_uncomputed() const { return static_cast<int64_t>(tokens.size()) - n_computed; }
};

// The request a set of sequences belongs to.
struct RequestState {
  RequestId id = 0;
  RequestParams params;
  EventCallback on_event;
  BlockHash prefix_root{};  // model + cache salt
  std::vector<std::unique_ptr<Sequence>>
      seqs;               // seqs[0] exists from the start; the others fork after prefill
  SpecConfig spec;        // the speculative decoding this request runs with
  std::string partition;  // cross-request drafter caches: cache salt + tenant
  int32_t n_finished = 0;
  bool aborted = false;
  int64_t cached_prompt_tokens = 0;
  Clock::time_point arrival;
  std::optional<Clock::time_point> first_scheduled;
  std::optional<Clock::time_point> first_token;
};

}  // namespace strata
