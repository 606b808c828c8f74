#include "server/tool_calls.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace strata::server {
namespace {

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kMistralOpen = "[TOOL_CALLS]";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kGraniteOpen = "<|tool_call|>";

bool is_ws(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

size_t skip_ws(std::string_view s, size_t i = 0) {
  while (i < s.size() && is_ws(s[i])) ++i;
  return i;
}

bool all_ws(std::string_view s) {
  return skip_ws(s) == s.size();
}

std::vector<std::string_view> open_markers(ToolFamily f) {
  switch (f) {
    case ToolFamily::Hermes:
      return {kHermesOpen};
    case ToolFamily::Mistral:
      return {kMistralOpen};
    case ToolFamily::Llama3:
      return {kPythonTag};
    case ToolFamily::Generic:
      return {kHermesOpen, kMistralOpen, kPythonTag, kGraniteOpen};
  }
  return {};
}

// Length of the longest suffix of `s` that is a proper prefix of one of `markers`.
size_t partial_marker_suffix(std::string_view s, const std::vector<std::string_view>& markers) {
  size_t best = 0;
  for (std::string_view m : markers)
    for (size_t n = std::min(s.size(), m.size() - 1); n > best; --n)
      if (s.substr(s.size() - n) == m.substr(0, n)) {
        best = n;
        break;
      }
  return best;
}

enum class Verdict { Yes, No, Maybe };

// Does `s` (after whitespace) open a call object: `[`? ws `{` ws then the key "name" or "type"?
Verdict probe_call(std::string_view s) {
  size_t i = skip_ws(s);
  if (i < s.size() && s[i] == '[') i = skip_ws(s, i + 1);
  if (i == s.size()) return Verdict::Maybe;
  if (s[i] != '{') return Verdict::No;
  i = skip_ws(s, i + 1);
  const std::string_view rest = s.substr(i);
  bool maybe = false;
  for (std::string_view key : {std::string_view("\"name\""), std::string_view("\"type\"")}) {
    if (rest.substr(0, key.size()) == key) return Verdict::Yes;
    if (rest.size() < key.size() && key.substr(0, rest.size()) == rest) maybe = true;
  }
  return maybe ? Verdict::Maybe : Verdict::No;
}

// The value of a JSON string literal, or the text itself if it is not one.
std::string decode_json_string(const std::string& literal) {
  const auto j = nlohmann::json::parse(literal, nullptr, false);
  return j.is_string() ? j.get<std::string>() : literal;
}

}  // namespace

ToolFamily detect_tool_family(std::string_view src) {
  if (src.find("[TOOL_CALLS]") != std::string_view::npos) return ToolFamily::Mistral;
  if (src.find("<tool_call>") != std::string_view::npos) return ToolFamily::Hermes;
  // Llama 3.1/3.2 write a call as {"name": ..., "parameters": ...} after their header tokens.
  if (src.find("<|start_header_id|>") != std::string_view::npos &&
      src.find("parameters") != std::string_view::npos)
    return ToolFamily::Llama3;
  return ToolFamily::Generic;
}

const char* tool_family_name(ToolFamily f) {
  switch (f) {
    case ToolFamily::Hermes:
      return "hermes";
    case ToolFamily::Llama3:
      return "llama3";
    case ToolFamily::Mistral:
      return "mistral";
    case ToolFamily::Generic:
      return "generic";
  }
  return "?";
}

ToolCallParser::ToolCallParser(ToolFamily family, bool forced) : family_(family), forced_(forced) {}

std::vector<ToolCallDelta> ToolCallParser::push(std::string_view text) {
  std::vector<ToolCallDelta> out;
  buf_.append(text);
  step(out, false);
  return out;
}

std::vector<ToolCallDelta> ToolCallParser::finish() {
  std::vector<ToolCallDelta> out;
  step(out, true);
  if (state_ == State::Object) {  // cut off inside a call object
    if (started_) {
      if (!args_is_string_) emit_arguments(out, std::string_view(args_raw_).substr(args_sent_));
    } else {
      emit_content(out, object_raw_);
    }
  }
  if (!buf_.empty()) emit_content(out, buf_);
  buf_.clear();
  state_ = State::Content;
  return out;
}

void ToolCallParser::emit_content(std::vector<ToolCallDelta>& out, std::string_view text) {
  if (text.empty()) return;
  content_.append(text);
  if (!out.empty() && out.back().kind == ToolCallDelta::Kind::Content) {
    out.back().text.append(text);
    return;
  }
  out.push_back({ToolCallDelta::Kind::Content, 0, std::string(text)});
}

void ToolCallParser::emit_arguments(std::vector<ToolCallDelta>& out, std::string_view text) {
  if (text.empty()) return;
  args_sent_ += text.size();
  const auto index = static_cast<int32_t>(calls_.size()) - 1;
  calls_.back().arguments.append(text);
  if (!out.empty() && out.back().kind == ToolCallDelta::Kind::Arguments && out.back().index == index) {
    out.back().text.append(text);
    return;
  }
  out.push_back({ToolCallDelta::Kind::Arguments, index, std::string(text)});
}

void ToolCallParser::step(std::vector<ToolCallDelta>& out, bool final) {
  for (bool progress = true; progress;) {
    switch (state_) {
      case State::Content:
        progress = step_content(out, final);
        break;
      case State::Probe:
        progress = step_probe(out, final);
        break;
      case State::AfterMarker:
      case State::ListNext:
        progress = step_after_marker(out, final);
        break;
      case State::Object:
        progress = step_object(out);
        break;
      case State::AfterObject:
        progress = step_after_object(out, final);
        break;
    }
  }
}

bool ToolCallParser::step_content(std::vector<ToolCallDelta>& out, bool final) {
  if (buf_.empty()) return false;
  const std::vector<std::string_view> markers = open_markers(family_);
  const bool may_probe = forced_ || family_ == ToolFamily::Llama3 || family_ == ToolFamily::Generic;
  if (at_boundary_) {
    const size_t i = skip_ws(buf_);
    if (i < buf_.size() && may_probe && (buf_[i] == '{' || buf_[i] == '[')) {
      state_ = State::Probe;
      return true;
    }
  }
  size_t best = std::string::npos;
  std::string_view marker;
  for (std::string_view m : markers)
    if (const size_t p = buf_.find(m); p < best) best = p, marker = m;
  if (best != std::string::npos) {
    const std::string_view before = std::string_view(buf_).substr(0, best);
    if (!(at_boundary_ && all_ws(before)))
      emit_content(out, before);  // whitespace before a call is no content
    buf_.erase(0, best + marker.size());
    marker_ = std::string(marker);
    state_ = State::AfterMarker;
    return true;
  }
  const size_t hold = final ? 0 : partial_marker_suffix(buf_, markers);
  const std::string_view ready = std::string_view(buf_).substr(0, buf_.size() - hold);
  if (at_boundary_ && all_ws(ready) && !final) return false;  // wait: a call may still follow
  if (ready.empty()) return false;
  emit_content(out, ready);
  if (!all_ws(ready)) at_boundary_ = false;
  buf_.erase(0, ready.size());
  return !buf_.empty() && final;
}

bool ToolCallParser::step_probe(std::vector<ToolCallDelta>& out, bool final) {
  const Verdict v = probe_call(buf_);
  if (v == Verdict::Maybe && !final) return false;
  if (v == Verdict::Yes) {
    size_t i = skip_ws(buf_);
    if (buf_[i] == '[') {
      in_list_ = true;
      i = skip_ws(buf_, i + 1);
    }
    buf_.erase(0, i);  // now at '{'
    begin_object();
    state_ = State::Object;
    return true;
  }
  // Not a call: the text up to and including its first non-space character is content.
  const size_t i = skip_ws(buf_) + 1;
  emit_content(out, std::string_view(buf_).substr(0, std::min(i, buf_.size())));
  buf_.erase(0, std::min(i, buf_.size()));
  at_boundary_ = false;
  state_ = State::Content;
  return true;
}

// After an opening marker or inside a list of calls: whitespace, then a call object, a list
// of them, the list's end, or (no call after all) content.
bool ToolCallParser::step_after_marker(std::vector<ToolCallDelta>& out, bool final) {
  const size_t i = skip_ws(buf_);
  buf_.erase(0, i);
  if (buf_.empty()) {
    if (final && state_ == State::AfterMarker && !marker_.empty()) emit_content(out, marker_);
    return false;
  }
  const char c = buf_[0];
  if (c == '{') {
    begin_object();
    state_ = State::Object;
    return true;
  }
  if (c == '[' && state_ == State::AfterMarker && !in_list_) {
    in_list_ = true;
    buf_.erase(0, 1);
    state_ = State::ListNext;
    return true;
  }
  if (state_ == State::ListNext && (c == ']' || c == ',')) {
    buf_.erase(0, 1);
    if (c == ']') {
      in_list_ = false;
      state_ = State::AfterObject;
    }
    return true;
  }
  // A marker without a call after it (e.g. Llama's <|python_tag|> before code): keep its text.
  if (state_ == State::AfterMarker) emit_content(out, marker_);
  in_list_ = false;
  at_boundary_ = false;
  state_ = State::Content;
  return true;
}

void ToolCallParser::begin_object() {
  object_raw_.clear();
  depth_ = 0;
  in_string_ = escape_ = false;
  key_.clear();
  reading_key_ = after_colon_ = false;
  field_ = Field::None;
  name_raw_.clear();
  args_raw_.clear();
  name_done_ = args_done_ = args_is_string_ = false;
  args_sent_ = 0;
  started_ = false;
}

// Scans the call object character by character (a JSON scanner that tracks strings and depth,
// not a full parser): the top-level "name" and "arguments"/"parameters" values are captured,
// the name announced as soon as it is complete, the arguments passed on as they arrive.
bool ToolCallParser::step_object(std::vector<ToolCallDelta>& out) {
  if (buf_.empty()) return false;
  size_t used = 0;
  bool closed = false;
  auto value_start = [&] {
    if (depth_ != 1 || !after_colon_ || field_ != Field::None) return;
    if (key_ == "name")
      field_ = Field::Name;
    else if ((key_ == "arguments" || key_ == "parameters") && !args_done_)
      field_ = Field::Args;
    else
      field_ = Field::Other;
  };
  // Only the first value of a key is captured: text after it (malformed output) is not.
  auto args = [&] { return field_ == Field::Args && !args_done_; };
  for (; used < buf_.size() && !closed; ++used) {
    const char c = buf_[used];
    object_raw_.push_back(c);
    if (in_string_) {
      bool end = false;
      if (escape_)
        escape_ = false;
      else if (c == '\\')
        escape_ = true;
      else if (c == '"')
        end = true, in_string_ = false;
      if (reading_key_) {
        if (end)
          reading_key_ = false;
        else
          key_.push_back(c);
      } else if (field_ == Field::Name && depth_ == 1 && !name_done_) {
        name_raw_.push_back(c);
        if (end) name_done_ = true;
      } else if (args()) {
        args_raw_.push_back(c);
        if (end && depth_ == 1) args_done_ = true;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string_ = true;
        if (depth_ == 1 && !after_colon_) {
          reading_key_ = true;
          key_.clear();
          break;
        }
        value_start();
        if (field_ == Field::Name && depth_ == 1 && !name_done_) name_raw_.assign(1, c);
        if (args()) {
          if (depth_ == 1 && args_raw_.empty()) args_is_string_ = true;  // the value is a string
          args_raw_.push_back(c);
        }
        break;
      case '{':
      case '[':
        if (depth_ == 0) {
          depth_ = 1;
          break;
        }
        value_start();
        if (args()) args_raw_.push_back(c);
        ++depth_;
        break;
      case '}':
      case ']':
        --depth_;
        if (depth_ <= 0) {
          closed = true;
          break;
        }
        if (args()) {
          args_raw_.push_back(c);
          if (depth_ == 1) args_done_ = true;
        }
        break;
      case ':':
        if (depth_ == 1)
          after_colon_ = true, field_ = Field::None;
        else if (args())
          args_raw_.push_back(c);
        break;
      case ',':
        if (depth_ == 1) {
          if (field_ == Field::Args) args_done_ = true;
          after_colon_ = false;
          field_ = Field::None;
        } else if (args()) {
          args_raw_.push_back(c);
        }
        break;
      default:
        if (is_ws(c)) {
          if (depth_ > 1 && args()) args_raw_.push_back(c);
          break;
        }
        value_start();  // a number, true, false or null
        if (args()) args_raw_.push_back(c);
        break;
    }
  }
  buf_.erase(0, used);
  if (name_done_ && !started_) {
    started_ = true;
    calls_.push_back({decode_json_string(name_raw_), ""});
    out.push_back(
        {ToolCallDelta::Kind::CallStart, static_cast<int32_t>(calls_.size()) - 1, calls_.back().name});
  }
  if (started_ && !args_is_string_) emit_arguments(out, std::string_view(args_raw_).substr(args_sent_));
  if (started_ && args_is_string_ && args_done_ && args_sent_ == 0)
    emit_arguments(out, decode_json_string(args_raw_));
  if (closed) end_object(out);
  return closed;
}

void ToolCallParser::end_object(std::vector<ToolCallDelta>& out) {
  if (!started_) {
    // An object without a name is no call: its text is content.
    emit_content(out, object_raw_);
    at_boundary_ = false;
    in_list_ = false;
    state_ = State::Content;
    return;
  }
  if (calls_.back().arguments.empty()) emit_arguments(out, "{}");  // a call without arguments
  state_ = State::AfterObject;
}

// After a call object: the list goes on or ends, the Hermes closing tag, a ";" between Llama
// calls; then content (or another call).
bool ToolCallParser::step_after_object(std::vector<ToolCallDelta>& out, bool final) {
  (void)out;
  buf_.erase(0, skip_ws(buf_));
  if (buf_.empty()) return false;
  if (in_list_) {
    if (buf_[0] == ',') {
      buf_.erase(0, 1);
      state_ = State::ListNext;
      return true;
    }
    in_list_ = false;
    if (buf_[0] == ']') buf_.erase(0, 1);
    return true;
  }
  const std::string_view close = kHermesClose;
  if (buf_.size() < close.size() && close.substr(0, buf_.size()) == buf_ && !final) return false;
  if (std::string_view(buf_).substr(0, close.size()) == close)
    buf_.erase(0, close.size());
  else if (buf_[0] == ';')
    buf_.erase(0, 1);
  at_boundary_ = true;
  state_ = State::Content;
  return true;
}

}  // namespace strata::server
