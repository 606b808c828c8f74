// The grammar of a forced tool call (tool_choice "required" or a named function): one call, or
// with parallel calls one or more, each naming a function and giving arguments valid against
// that function's JSON Schema, framed the way the model's chat template writes calls:
//   list_begin  call_begin {"name": "NAME", "ARGS_KEY": ARGS} call_end  (separator ...)  list_end
// e.g. Hermes/Qwen: call_begin "<tool_call>\n", call_end "\n</tool_call>", separator "\n";
// Mistral: list_begin "[", separator ", ", list_end "]"; Llama 3: args_key "parameters".
#pragma once

#include <nlohmann/json.hpp>

#include "grammar/expr.h"

namespace strata::grammar {

inline constexpr size_t kMaxToolsInGrammar = 128;

// `spec` (a JSON object): {"call_begin", "call_end", "separator", "list_begin", "list_end",
// "args_key": strings; "parallel": bool; "tools": [{"name": string, "parameters": schema or
// absent (any object)}]}. Throws GrammarError for an invalid schema or spec.
GrammarAst tool_call_grammar(const nlohmann::ordered_json& spec);

}  // namespace strata::grammar
