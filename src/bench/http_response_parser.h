// Incremental parser of one HTTP/1.1 response, fed with bytes as they arrive from the socket.
//
// Decodes the body framing — "Transfer-Encoding: chunked", "Content-Length", or a body that
// ends when the server closes the connection — and hands out the body bytes as soon as they
// are complete enough to be known as body, so a streamed response is seen chunk by chunk.
// Interim 1xx responses are skipped. Every size is bounded: a hostile server gets an error,
// never an unbounded buffer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::bench {

class HttpResponseParser {
 public:
  enum class State { kHeaders, kBody, kDone, kError };

  // Appends the decoded body bytes contained in `bytes` to `body`. Returns the state after
  // consuming them; bytes after the end of the response are ignored.
  State feed(std::string_view bytes, std::string& body);
  // The server closed the connection: completes a close-delimited body, else an error if the
  // response was incomplete.
  State finish_eof();

  State state() const { return state_; }
  bool headers_done() const { return state_ == State::kBody || state_ == State::kDone; }
  int status() const { return status_; }
  const std::string& error() const { return error_; }
  // Value of the first header with this name (case-insensitive), or "".
  std::string header(std::string_view name) const;

 private:
  enum class BodyMode { kChunked, kLength, kUntilClose };
  enum class ChunkState { kSize, kData, kDataEnd, kTrailer };

  size_t consume_headers(std::string_view bytes);
  bool parse_head(std::string_view head);
  size_t consume_body(std::string_view bytes, std::string& body);
  size_t consume_chunked(std::string_view bytes, std::string& body);
  bool parse_chunk_size(std::string_view line);
  void fail(std::string message);

  State state_ = State::kHeaders;
  int status_ = 0;
  std::string error_;
  std::string head_;                                          // header bytes collected so far
  std::vector<std::pair<std::string, std::string>> headers_;  // lower-case names
  BodyMode mode_ = BodyMode::kUntilClose;
  uint64_t remaining_ = 0;  // bytes left in the body (kLength) or the current chunk (kData)
  ChunkState chunk_state_ = ChunkState::kSize;
  std::string line_;  // chunk-size / trailer line collected so far
};

}  // namespace strata::bench
