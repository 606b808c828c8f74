#include "server/json_fields.h"

#include <cmath>
#include <sstream>

#include "server/api_error.h"

namespace strata::server {
namespace {

std::string format_number(double v) {
  std::ostringstream ss;
  ss.precision(10);
  ss << v;
  return ss.str();
}

// Deepest nesting of arrays/objects, stopping early once `limit` is passed. Only brackets
// outside strings count; escapes inside strings are skipped.
bool nesting_within(std::string_view s, int limit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

}  // namespace

ChatJson parse_json_body(std::string_view body, int max_depth) {
  if (!nesting_within(body, max_depth))
    throw bad_request("The request body nests JSON deeper than " + std::to_string(max_depth) + " levels.");
  ChatJson j = ChatJson::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw bad_request("The request body is not valid JSON.", "invalid_json");
  if (!j.is_object()) throw bad_request("The request body must be a JSON object.", "invalid_json");
  return j;
}

const char* json_type_phrase(const ChatJson& v) {
  switch (v.type()) {
    case ChatJson::value_t::null:
      return "null";
    case ChatJson::value_t::boolean:
      return "a boolean";
    case ChatJson::value_t::string:
      return "a string";
    case ChatJson::value_t::array:
      return "an array";
    case ChatJson::value_t::object:
      return "an object";
    case ChatJson::value_t::number_integer:
    case ChatJson::value_t::number_unsigned:
      return "an integer";
    case ChatJson::value_t::number_float:
      return "a number";
    default:
      return "an unsupported value";
  }
}

int64_t json_integer(const ChatJson& v, const std::string& name, int64_t lo, int64_t hi) {
  int64_t value = 0;
  bool in_range = true;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    in_range = u <= static_cast<uint64_t>(INT64_MAX);
    value = in_range ? static_cast<int64_t>(u) : INT64_MAX;
  } else if (v.is_number_integer()) {
    value = v.get<int64_t>();
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d))
      throw invalid_type(name, "'" + name + "' must be an integer, got " + format_number(d) + ".");
    in_range = d >= -9.2e18 && d <= 9.2e18;
    value = in_range ? static_cast<int64_t>(d) : 0;
  } else {
    throw invalid_type(name, "'" + name + "' must be an integer, got " + json_type_phrase(v) + ".");
  }
  if (!in_range || value < lo || value > hi)
    throw invalid_value(name, "'" + name + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                  "], got " + (in_range ? std::to_string(value) : v.dump()) + ".");
  return value;
}

double json_number(const ChatJson& v, const std::string& name, double lo, double hi, bool lo_open) {
  if (!v.is_number())
    throw invalid_type(name, "'" + name + "' must be a number, got " + json_type_phrase(v) + ".");
  const double d = v.get<double>();
  const bool ok = std::isfinite(d) && (lo_open ? d > lo : d >= lo) && d <= hi;
  if (!ok)
    throw invalid_value(name, "'" + name + "' must be in " + (lo_open ? "(" : "[") + format_number(lo) +
                                  ", " + format_number(hi) + "], got " + format_number(d) + ".");
  return d;
}

const std::string& json_string(const ChatJson& v, const std::string& name, size_t max_bytes) {
  if (!v.is_string())
    throw invalid_type(name, "'" + name + "' must be a string, got " + json_type_phrase(v) + ".");
  const std::string& s = v.get_ref<const std::string&>();
  if (s.size() > max_bytes)
    throw invalid_value(name, "'" + name + "' is too long (" + std::to_string(s.size()) +
                                  " bytes; the limit is " + std::to_string(max_bytes) + ").");
  return s;
}

const ChatJson* JsonFields::get(const char* key) const {
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<bool> JsonFields::boolean(const char* key) const {
  const ChatJson* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean())
    throw invalid_type(key,
                       std::string("'") + key + "' must be a boolean, got " + json_type_phrase(*v) + ".");
  return v->get<bool>();
}

std::optional<int64_t> JsonFields::integer(const char* key, int64_t lo, int64_t hi) const {
  const ChatJson* v = get(key);
  if (!v) return std::nullopt;
  return json_integer(*v, key, lo, hi);
}

std::optional<double> JsonFields::number(const char* key, double lo, double hi, bool lo_open) const {
  const ChatJson* v = get(key);
  if (!v) return std::nullopt;
  return json_number(*v, key, lo, hi, lo_open);
}

std::optional<std::string> JsonFields::string(const char* key, size_t max_bytes) const {
  const ChatJson* v = get(key);
  if (!v) return std::nullopt;
  return json_string(*v, key, max_bytes);
}

}  // namespace strata::server
