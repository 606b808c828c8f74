// Incremental parser of a Server-Sent Events stream (the WHATWG "text/event-stream" format).
//
// Bytes may arrive split anywhere — inside a line, between "\r" and "\n" — and are fed as they
// come. Lines end with "\r\n", "\n" or "\r"; a blank line dispatches the event collected so far.
// "data" lines are joined with "\n", "event" sets the type, comments (":...") and other fields
// ("id", "retry", unknown names) are ignored. An event without data lines is not dispatched.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace strata::bench {

struct SseEvent {
  std::string type;  // the "event:" field; empty means the default "message"
  std::string data;
};

class SseParser {
 public:
  // A line or an event's data longer than this is a protocol error (no unbounded growth).
  explicit SseParser(size_t max_event_bytes = 16u << 20) : max_event_bytes_(max_event_bytes) {}

  // Parses `bytes` and appends every completed event to `out`. Returns false (and stays
  // failed) when a limit is exceeded; error() says why.
  bool feed(std::string_view bytes, std::vector<SseEvent>& out);
  // End of stream: an event whose terminating blank line is missing is still dispatched
  // (lenient: some servers close right after the last data line).
  void finish(std::vector<SseEvent>& out);

  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  void process_line(std::string_view line, std::vector<SseEvent>& out);
  void dispatch(std::vector<SseEvent>& out);

  size_t max_event_bytes_;
  std::string line_;        // the current, unterminated line
  bool skip_lf_ = false;    // the previous byte was "\r": a following "\n" belongs to it
  bool have_data_ = false;  // at least one data line in the current event
  SseEvent pending_;
  std::string error_;
};

}  // namespace strata::bench
