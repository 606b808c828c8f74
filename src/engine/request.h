// What a client asks of the engine, and the events it gets back.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/embedding.h"
#include "engine/spec/spec_config.h"
#include "sampling/sampler.h"
#include "sampling/sampling_params.h"
#include "sampling/token_constraint.h"

namespace strata {

using RequestId = uint64_t;
using Clock = std::chrono::steady_clock;

struct StopConditions {
  int32_t max_tokens = 16;                // generated tokens per choice (0: score the prompt only)
  std::vector<std::string> stop_strings;  // matched across token boundaries, never emitted
  std::vector<int32_t> stop_token_ids;    // extra stop tokens (never part of the text)
  bool ignore_eos = false;                // keep going after end-of-generation tokens
};

struct RequestParams {
  std::vector<int32_t> prompt;  // token ids, BOS included when wanted
  SamplingParams sampling;
  StopConditions stop;
  int32_t n = 1;              // parallel choices sharing the prompt's KV blocks
  int32_t top_logprobs = -1;  // -1: no logprobs; k >= 0: chosen token's logprob + k alternatives
  std::string cache_salt;     // prefix-cache isolation: different salts never share blocks
  // Logits of prompt positions >= prompt_logits_from are delivered in events (-1: none); used by
  // perplexity, kld and `strata logits`. Row j predicts prompt token j + 1.
  int64_t prompt_logits_from = -1;
  // With EngineConfig::kv_evict: the prompt position where eviction happens (the cache is
  // compacted once the first kv_evict_at tokens are computed; later prompt tokens run over the
  // compacted cache, so perplexity and kld can score them). -1: the end of the prompt.
  int64_t kv_evict_at = -1;
  // Structured output: each sequence gets its own constraint from this factory; only tokens it
  // allows are sampled (drafts are cut at the first it refuses), and the choice finishes ("stop")
  // once the match is complete and cannot go on, or when an end-of-generation token is sampled
  // (allowed only when complete).
  std::shared_ptr<const TokenConstraintFactory> constraint;  // null: unconstrained
  // This request's speculative decoding, overriding the engine's (unset: the engine's).
  std::optional<SpecOverride> speculative;
  // Partition of cross-request caches (the API key when the server has keys): with cache_salt,
  // no tenant's text is ever proposed to another by a shared drafter cache.
  std::string tenant;
  // An embedding request (not None): the prompt is evaluated and its final hidden states pooled
  // into EngineEvent::embedding; nothing is sampled (max_tokens 0, n 1). It never reads the
  // prefix cache (mean pooling needs every position's hidden state), but publishes its blocks.
  Pooling pooling = Pooling::None;
};

enum class FinishReason { None, Stop, Length, Abort, Error };
const char* finish_reason_name(FinishReason r);

struct TokenOutput {
  int32_t token;
  float logprob = 0.0f;           // when top_logprobs >= 0
  std::vector<TokenLogprob> top;  // k alternatives, most likely first
  std::string piece;              // raw bytes of this token (may be partial UTF-8)
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;  // over all choices
  int64_t cached_prompt_tokens = 0;
  int64_t draft_tokens = 0;           // speculative tokens proposed, over all choices
  int64_t accepted_draft_tokens = 0;  // of them, accepted
  int64_t draft_rounds = 0;           // verification steps with drafts
};

// One event for one choice of a request. Delivered in order, on the engine thread: the
// callback must be quick and must not block (queue it and return).
struct EngineEvent {
  RequestId id = 0;
  int32_t index = 0;                         // choice index (0 .. n-1)
  std::string text;                          // newly final text (valid UTF-8; stop strings removed)
  std::vector<TokenOutput> tokens;           // tokens generated this step (several when drafts were accepted)
  FinishReason finish = FinishReason::None;  // set on the last event of the choice
  std::string error;                         // FinishReason::Error
  // On the final event of the last choice to finish: the whole request is done.
  bool request_done = false;
  Usage usage;  // filled when request_done
  // Prompt logits (RequestParams::prompt_logits_from): rows [logits_first_row, +n_logits_rows)
  // of the prompt, [n_logits_rows, n_vocab]. Valid only during the callback.
  const float* logits = nullptr;
  int64_t logits_first_row = 0;
  int64_t n_logits_rows = 0;
  // Embedding requests (RequestParams::pooling): the pooled final hidden state, unnormalized,
  // [n_embd], on the final event.
  std::vector<float> embedding;
};

using EventCallback = std::function<void(const EngineEvent&)>;

}  // namespace strata
