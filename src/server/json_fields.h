// Typed, range-checked access to the fields of a JSON request body.
//
// Every accessor treats an absent field and an explicit null alike (OpenAI clients send
// either), and throws ApiError 400 naming the field when its type or value is wrong. Unknown
// fields are never looked at, so they are ignored, as OpenAI does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "template/chat_template.h"

namespace strata::server {

// Parses a request body into JSON (ordered, as chat templates need). Rejects invalid JSON,
// a non-object top level and nesting deeper than `max_depth` (a hostile body of a million
// '[' must not exhaust the stack of anything that walks the tree later) with ApiError 400.
ChatJson parse_json_body(std::string_view body, int max_depth = 64);

class JsonFields {
 public:
  // `object` must be a JSON object and outlive this view.
  explicit JsonFields(const ChatJson& object) : object_(object) {}

  // The field, or nullptr when absent or null.
  const ChatJson* get(const char* key) const;
  bool has(const char* key) const { return get(key) != nullptr; }

  std::optional<bool> boolean(const char* key) const;
  // An integer in [lo, hi]. A float with an integral value (3.0) is accepted as that integer.
  std::optional<int64_t> integer(const char* key, int64_t lo, int64_t hi) const;
  // A finite number in [lo, hi] (or (lo, hi] when lo_open).
  std::optional<double> number(const char* key, double lo, double hi, bool lo_open = false) const;
  std::optional<std::string> string(const char* key, size_t max_bytes) const;

 private:
  const ChatJson& object_;
};

// The same checks for a value that is not a field of an object (array elements, map values);
// `name` is what error messages call it ("stop[2]", "logit_bias[\"50\"]").
int64_t json_integer(const ChatJson& v, const std::string& name, int64_t lo, int64_t hi);
double json_number(const ChatJson& v, const std::string& name, double lo, double hi, bool lo_open = false);
const std::string& json_string(const ChatJson& v, const std::string& name, size_t max_bytes);

// The JSON type name as OpenAI's messages word it ("a string", "an array", ...).
const char* json_type_phrase(const ChatJson& v);

}  // namespace strata::server
