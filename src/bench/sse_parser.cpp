#include "bench/sse_parser.h"

namespace strata::bench {

bool SseParser::feed(std::string_view bytes, std::vector<SseEvent>& out) {
  if (failed()) return false;
  size_t pos = 0;
  while (pos < bytes.size()) {
    if (skip_lf_) {
      skip_lf_ = false;
      if (bytes[pos] == '\n') {
        ++pos;
        continue;
      }
    }
    const size_t end = bytes.find_first_of("\r\n", pos);
    if (end == std::string_view::npos) {
      line_.append(bytes.substr(pos));
      pos = bytes.size();
    } else {
      line_.append(bytes.substr(pos, end - pos));
      skip_lf_ = bytes[end] == '\r';
      pos = end + 1;
      process_line(line_, out);
      line_.clear();
    }
    if (line_.size() + pending_.data.size() > max_event_bytes_) {
      error_ = "server-sent event larger than " + std::to_string(max_event_bytes_) + " bytes";
      return false;
    }
  }
  return true;
}

void SseParser::finish(std::vector<SseEvent>& out) {
  if (failed()) return;
  if (!line_.empty()) process_line(line_, out);
  line_.clear();
  dispatch(out);
}

void SseParser::process_line(std::string_view line, std::vector<SseEvent>& out) {
  if (line.empty()) {
    dispatch(out);
    return;
  }
  if (line.front() == ':') return;  // comment (keep-alive pings)
  const size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value;
  if (colon != std::string_view::npos) {
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (have_data_) pending_.data += '\n';
    pending_.data.append(value);
    have_data_ = true;
  } else if (field == "event") {
    pending_.type.assign(value);
  }
}

void SseParser::dispatch(std::vector<SseEvent>& out) {
  if (have_data_) out.push_back(std::move(pending_));
  pending_ = SseEvent{};
  have_data_ = false;
}

}  // namespace strata::bench
