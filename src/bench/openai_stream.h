// The OpenAI streaming protocol as the load generator speaks it: the request body it sends and
// the meaning of each server-sent event it gets back, for /v1/completions and
// /v1/chat/completions.
//
// Only fields of the public OpenAI API are used, so any compatible server works (vLLM,
// llama.cpp, TGI, Ollama, Strata). `ignore_eos` is an extension sent only when asked for.
//
// Definitions (seconds, from the moment the connection for the request is opened):
//   content chunk  an event whose choices carry non-empty text (completions: choices[].text;
//                  chat: choices[].delta.content or delta.reasoning_content). Role-only chunks,
//                  finish_reason-only chunks and usage chunks are not tokens.
//   TTFT           arrival of the first content chunk.
//   E2E latency    arrival of the last content chunk.
//   ITL            every gap between consecutive content chunks (content_chunks - 1 per request).
//   output tokens  usage.completion_tokens when the server reports it, else one per content chunk.
//   input tokens   usage.prompt_tokens when reported, else the workload's estimate.
// A request succeeds when the HTTP status is 2xx, the stream ends with "data: [DONE]" and at
// least one content chunk arrived.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "bench/request_record.h"
#include "bench/sse_parser.h"
#include "bench/workload.h"

namespace strata::bench {

enum class EndpointKind { kCompletions, kChat };

// "completions" or "chat"; throws strata::Error otherwise.
EndpointKind parse_endpoint_kind(std::string_view name);
// "/v1/completions" or "/v1/chat/completions".
const char* endpoint_path(EndpointKind kind);

struct GenerationOptions {
  std::string model;
  EndpointKind endpoint = EndpointKind::kCompletions;
  bool ignore_eos = false;  // sends "ignore_eos": true (vLLM / llama.cpp / Strata extension)
  double temperature = 0.0;
  std::string extra_body;  // a JSON object merged into every body (e.g. a response_format); "" for none
};

// The JSON body of one streamed request (asks for usage with stream_options.include_usage).
std::string build_request_body(const BenchRequest& request, const GenerationOptions& options);

// What one server-sent event means.
struct StreamEventInfo {
  enum class Kind { kChunk, kDone, kError, kMalformed };
  Kind kind = Kind::kChunk;
  bool has_content = false;
  int64_t completion_tokens = -1;  // usage fields, -1 when absent
  int64_t prompt_tokens = -1;
  int64_t draft_n = -1, draft_n_accepted = -1;  // timings fields, -1 when absent
  std::string message;                          // for kError / kMalformed
};
StreamEventInfo interpret_event(const SseEvent& event, EndpointKind kind);

// Turns the timed events of one streamed response into a RequestRecord.
class StreamTracker {
 public:
  using Clock = std::chrono::steady_clock;

  StreamTracker(EndpointKind kind, Clock::time_point sent) : kind_(kind), sent_(sent) {}

  void on_event(const SseEvent& event, Clock::time_point arrival);
  // Marks the request failed (the first failure wins).
  void fail(std::string error_class, std::string message);
  // True once "[DONE]" arrived or the request failed: nothing more to read.
  bool finished() const { return done_ || !record_.error_class.empty(); }
  // Completes the record when the response has ended; a stream that is not finished() is a
  // malformed (truncated) stream. `estimated_input_tokens` is used when usage is absent.
  RequestRecord take_record(int64_t estimated_input_tokens);

 private:
  EndpointKind kind_;
  Clock::time_point sent_;
  Clock::time_point last_content_{};
  bool done_ = false;
  RequestRecord record_;
};

}  // namespace strata::bench
