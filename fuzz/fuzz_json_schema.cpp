// libFuzzer target for the JSON-Schema compiler: the input is JSON text (a request's
// guided_json / response_format schema). Any JSON ends in a grammar or a GrammarError; a
// grammar that compiles is walked with masks checked against the brute force.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "grammar/json_schema.h"
#include "grammar/limits.h"
#include "grammar_fuzz_common.h"

namespace {

// The server refuses bodies nesting deeper than 64 levels before parsing them.
bool shallow(const uint8_t* data, size_t size) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < size; ++i) {
    const char c = static_cast<char>(data[i]);
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > 64) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 8192 || !shallow(data, size)) return 0;
  const auto schema = nlohmann::ordered_json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return 0;
  try {
    const strata::grammar::Grammar g =
        strata::grammar::compile_grammar(strata::grammar::json_schema_grammar(schema));
    strata::fuzz::differential_walk(g, data, size);
  } catch (const strata::grammar::GrammarError&) {
  }
  return 0;
}
