#include "bench/http_response_parser.h"

#include <algorithm>
#include <cctype>

namespace strata::bench {
namespace {

constexpr size_t kMaxHeadBytes = 64 * 1024;
constexpr size_t kMaxLineBytes = 4096;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Position just past the blank line ending the header block ("\r\n\r\n" or "\n\n"), or npos.
size_t find_head_end(std::string_view s) {
  for (size_t i = s.find('\n'); i != std::string_view::npos; i = s.find('\n', i + 1)) {
    if (i + 1 < s.size() && s[i + 1] == '\n') return i + 2;
    if (i + 2 < s.size() && s[i + 1] == '\r' && s[i + 2] == '\n') return i + 3;
  }
  return std::string_view::npos;
}

}  // namespace

void HttpResponseParser::fail(std::string message) {
  state_ = State::kError;
  error_ = std::move(message);
}

std::string HttpResponseParser::header(std::string_view name) const {
  const std::string key = lower(name);
  for (const auto& [k, v] : headers_)
    if (k == key) return v;
  return "";
}

HttpResponseParser::State HttpResponseParser::feed(std::string_view bytes, std::string& body) {
  while (!bytes.empty() && (state_ == State::kHeaders || state_ == State::kBody)) {
    const size_t used = state_ == State::kHeaders ? consume_headers(bytes) : consume_body(bytes, body);
    bytes.remove_prefix(used);
  }
  return state_;
}

size_t HttpResponseParser::consume_headers(std::string_view bytes) {
  // Search only the tail that can complete a terminator, so byte-by-byte feeding stays linear.
  const size_t old_size = head_.size();
  head_.append(bytes);
  const size_t from = old_size >= 3 ? old_size - 3 : 0;
  const size_t end = find_head_end(std::string_view(head_).substr(from));
  if (end == std::string_view::npos) {
    if (head_.size() > kMaxHeadBytes) fail("response header larger than 64 KiB");
    return bytes.size();
  }
  const size_t head_len = from + end;
  const size_t used = head_len - old_size;
  const std::string head = head_.substr(0, head_len);
  head_.clear();
  if (!parse_head(head)) return bytes.size();
  if (status_ >= 100 && status_ < 200) {  // interim response: the real one follows
    headers_.clear();
    return used;
  }
  state_ = State::kBody;
  if (status_ == 204 || status_ == 304 || (mode_ == BodyMode::kLength && remaining_ == 0))
    state_ = State::kDone;
  return used;
}

bool HttpResponseParser::parse_head(std::string_view head) {
  size_t eol = head.find('\n');
  const std::string_view status_line = trim(head.substr(0, eol));
  // "HTTP/1.1 200 OK": the version, one space, three digits.
  if (status_line.size() < 12 || status_line.substr(0, 5) != "HTTP/" || status_line[8] != ' ' ||
      !std::all_of(status_line.begin() + 9, status_line.begin() + 12,
                   [](char c) { return c >= '0' && c <= '9'; })) {
    fail("malformed HTTP status line");
    return false;
  }
  status_ = std::stoi(std::string(status_line.substr(9, 3)));
  headers_.clear();
  while (eol != std::string_view::npos && eol + 1 < head.size()) {
    const size_t next = head.find('\n', eol + 1);
    const std::string_view line = trim(head.substr(eol + 1, next - eol - 1));
    eol = next;
    if (line.empty()) continue;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      fail("malformed HTTP header line");
      return false;
    }
    headers_.emplace_back(lower(trim(line.substr(0, colon))), std::string(trim(line.substr(colon + 1))));
  }
  const std::string te = lower(header("transfer-encoding"));
  const std::string length = header("content-length");
  if (!te.empty() && te != "identity") {
    if (te.size() < 7 || te.compare(te.size() - 7, 7, "chunked") != 0) {
      fail("unsupported transfer-encoding: " + te);
      return false;
    }
    mode_ = BodyMode::kChunked;
    chunk_state_ = ChunkState::kSize;
  } else if (!length.empty()) {
    if (length.size() > 18 ||
        !std::all_of(length.begin(), length.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      fail("malformed content-length: " + length);
      return false;
    }
    mode_ = BodyMode::kLength;
    remaining_ = std::stoull(length);
  } else {
    mode_ = BodyMode::kUntilClose;
  }
  return true;
}

size_t HttpResponseParser::consume_body(std::string_view bytes, std::string& body) {
  if (mode_ == BodyMode::kChunked) return consume_chunked(bytes, body);
  if (mode_ == BodyMode::kUntilClose) {
    body.append(bytes);
    return bytes.size();
  }
  const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, bytes.size()));
  body.append(bytes.substr(0, take));
  remaining_ -= take;
  if (remaining_ == 0) state_ = State::kDone;
  return take;
}

bool HttpResponseParser::parse_chunk_size(std::string_view line) {
  line = trim(line.substr(0, line.find(';')));  // drop chunk extensions
  if (line.empty() || line.size() > 15) return false;
  uint64_t size = 0;
  for (char c : line) {
    const int digit = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                      : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                      : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                                  : -1;
    if (digit < 0) return false;
    size = size * 16 + static_cast<uint64_t>(digit);
  }
  remaining_ = size;
  return true;
}

size_t HttpResponseParser::consume_chunked(std::string_view bytes, std::string& body) {
  if (chunk_state_ == ChunkState::kData) {
    const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, bytes.size()));
    body.append(bytes.substr(0, take));
    remaining_ -= take;
    if (remaining_ == 0) chunk_state_ = ChunkState::kDataEnd;
    return take;
  }
  // The other states read one line: the size, the CRLF after the data, or a trailer line.
  const size_t nl = bytes.find('\n');
  const size_t used = nl == std::string_view::npos ? bytes.size() : nl + 1;
  line_.append(bytes.substr(0, used));
  if (line_.size() > kMaxLineBytes) {
    fail("chunked encoding line too long");
    return bytes.size();
  }
  if (nl == std::string_view::npos) return used;
  const std::string_view line = trim(std::string_view(line_).substr(0, line_.size() - 1));
  if (chunk_state_ == ChunkState::kSize) {
    if (!parse_chunk_size(line)) {
      fail("malformed chunk size");
      return bytes.size();
    }
    chunk_state_ = remaining_ == 0 ? ChunkState::kTrailer : ChunkState::kData;
  } else if (chunk_state_ == ChunkState::kDataEnd) {
    if (!line.empty()) {
      fail("missing CRLF after chunk data");
      return bytes.size();
    }
    chunk_state_ = ChunkState::kSize;
  } else if (line.empty()) {  // kTrailer: a blank line ends the message
    state_ = State::kDone;
  }
  line_.clear();
  return used;
}

HttpResponseParser::State HttpResponseParser::finish_eof() {
  if (state_ == State::kBody && mode_ == BodyMode::kUntilClose) {
    state_ = State::kDone;
  } else if (state_ == State::kHeaders) {
    fail(head_.empty() ? "connection closed before any response"
                       : "connection closed inside the response header");
  } else if (state_ == State::kBody) {
    fail("connection closed before the end of the response body");
  }
  return state_;
}

}  // namespace strata::bench
