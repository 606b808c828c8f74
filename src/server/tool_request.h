// The tool-calling fields of /v1/chat/completions (internal to the request parser):
//   tools                [{"type": "function", "function": {"name", "description",
//                        "parameters": JSON Schema, "strict"}}]   (at most 128)
//   tool_choice          "none" | "auto" | "required" | {"type": "function", "function": {"name"}}
//   parallel_tool_calls  bool (default true)
// "auto" parses calls out of whatever the model writes; "required" and a named function also
// hold the output to the grammar of calls (tool_call_grammar.h), so arguments always validate
// against the function's schema. "none" hides the tools from the template and parses nothing.
#pragma once

#include "server/generation_request.h"
#include "server/json_fields.h"

namespace strata::server {

inline constexpr size_t kMaxTools = 128;

struct ToolRequest {
  ChatJson template_tools = nullptr;  // what the chat template sees as `tools` (null: none)
  ToolCallMode mode;
  bool parallel = true;
  ChatJson forced_tools = nullptr;  // "required": every tool; named: that one (else null)
  bool inject_prompt = false;       // the template ignores tools: describe them in a message
};

// Validates the fields; `template_source` decides the tool-call family. Throws ApiError 400.
ToolRequest parse_tool_request(const JsonFields& f, const std::string& template_source);

// For templates that know no tools (the Generic family): the tools described in the first user
// message (the model is told to answer with <tool_call> blocks), assistant tool_calls written as
// such blocks, tool results as user turns in <tool_response> blocks, runs of one role merged.
ChatJson with_tool_prompt(const ChatJson& messages, const ChatJson& tools);

// Forced modes: sets req.params.constraint to the call grammar. A request that also asks for
// structured output (response_format, ...) cannot be held to both: 400.
void apply_tool_constraint(const ToolRequest& tr, const ServedModel& model, GenerationRequest& req);

}  // namespace strata::server
