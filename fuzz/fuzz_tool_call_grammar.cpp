// libFuzzer target for the forced tool-call grammar: the input is the grammar's spec as JSON
// (framing strings, tools with parameter schemas). It compiles or fails with a GrammarError; a
// compiled one is walked with masks checked against the brute force.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "grammar/limits.h"
#include "grammar/tool_call_grammar.h"
#include "grammar_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  const auto spec = nlohmann::ordered_json::parse(data, data + size, nullptr, false);
  if (spec.is_discarded()) return 0;
  try {
    const strata::grammar::Grammar g =
        strata::grammar::compile_grammar(strata::grammar::tool_call_grammar(spec));
    strata::fuzz::differential_walk(g, data, size);
  } catch (const strata::grammar::GrammarError&) {
  }
  return 0;
}
