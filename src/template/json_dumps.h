// Python's json.dumps for template values (the `tojson` filter HF installs).
#pragma once

#include <optional>
#include <string>

#include "template/value.h"

namespace strata::jinja {

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;          // nullopt: one line; else the text of one indent level
  std::optional<std::string> item_separator;  // default ", " (one line) or "," (indented)
  std::string key_separator = ": ";
  bool sort_keys = false;
  size_t max_bytes = 0;  // the output may not exceed this (strata::Error otherwise)
};

// Same text as json.dumps(v, ...) for JSON-like values; undefined, objects and other
// non-serializable values throw strata::Error ("Object of type X is not JSON serializable").
std::string json_dumps(const Value& v, const JsonDumpOptions& options);

}  // namespace strata::jinja
