// What the load generator records about one request; the input of every metric.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::bench {

// Failure classes (RequestRecord::error_class).
inline constexpr const char* kErrorConnect = "connect_error";       // refused, unreachable, reset
inline constexpr const char* kErrorTimeout = "timeout";             // --timeout elapsed
inline constexpr const char* kErrorMalformed = "malformed_stream";  // bad HTTP/SSE/JSON, truncated
inline constexpr const char* kErrorStream = "stream_error";         // the server sent an error event
inline constexpr const char* kErrorEmpty = "empty_output";          // stream ended with no content
// HTTP errors are classed "http_<status>", e.g. "http_503".

struct RequestRecord {
  bool success = false;
  std::string error_class;  // empty on success
  std::string error_message;

  double scheduled_s = 0.0;  // planned send time, seconds from the start of the run
  double sent_s = 0.0;       // actual send time (connect started), seconds from the start
  // Latencies in seconds, measured from the moment the connection was opened:
  double ttft_s = 0.0;        // until the first chunk carrying content arrived
  double e2e_s = 0.0;         // until the last chunk carrying content arrived
  std::vector<double> itl_s;  // gaps between consecutive content chunks (content_chunks - 1)

  int64_t content_chunks = 0;  // stream events that carried generated text
  int64_t output_tokens = 0;   // usage.completion_tokens if reported, else content_chunks
  bool output_tokens_from_usage = false;
  int64_t input_tokens = 0;  // usage.prompt_tokens if reported, else the workload's estimate
  bool input_tokens_from_usage = false;
  // Speculative decoding, when the server reports it (llama-server's and Strata's
  // `timings.draft_n` / `timings.draft_n_accepted`); -1 when it does not.
  int64_t draft_tokens = -1, accepted_draft_tokens = -1;
};

}  // namespace strata::bench
