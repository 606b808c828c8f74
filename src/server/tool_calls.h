// Tool calls in generated text: the syntax each chat-template family makes its models write,
// parsed incrementally into content and OpenAI tool calls (name, then arguments piece by
// piece), so that streaming and non-streaming answers agree and content never carries a call.
//
//   Hermes / Qwen   <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>   (repeated)
//   Llama 3.x       {"name": "f", "parameters": {...}}   (the whole reply, optionally after
//                   <|python_tag|>; several separated by ";")
//   Mistral         [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]
//   Generic         any of the above, and Granite's <|tool_call|>[...] (other templates)
// A call object may give "arguments" as an object or as a JSON string of one (decoded).
// With `forced` (tool_choice "required" or named, the output held to the call grammar), the
// reply is calls from its first byte: a JSON object or list opens a call without a marker.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::server {

enum class ToolFamily { Hermes, Llama3, Mistral, Generic };

// The family of a chat template, from the tool-call syntax its source writes.
ToolFamily detect_tool_family(std::string_view template_source);
const char* tool_family_name(ToolFamily f);

struct ToolCallDelta {
  enum class Kind { Content, CallStart, Arguments };
  Kind kind = Kind::Content;
  int32_t index = 0;  // CallStart, Arguments: the call, numbered from 0
  std::string text;   // content text, the function name (CallStart) or an arguments fragment
};

struct ParsedToolCall {
  std::string name;
  std::string arguments;  // JSON text (the model's own, or the decoded string form)
};

class ToolCallParser {
 public:
  ToolCallParser(ToolFamily family, bool forced);

  // Feeds generated text; returns what became certain. Text that may still turn out to be a
  // call (a marker's prefix, an object not yet known to be a call) is held back.
  std::vector<ToolCallDelta> push(std::string_view text);
  // The end of generation: whatever is held back. A call cut off (max_tokens) keeps the
  // arguments it has; held text that never became a call is content.
  std::vector<ToolCallDelta> finish();

  // Everything so far, accumulated (non-streaming answers).
  const std::string& content() const { return content_; }
  const std::vector<ParsedToolCall>& calls() const { return calls_; }

 private:
  enum class State { Content, Probe, AfterMarker, Object, AfterObject, ListNext };
  void step(std::vector<ToolCallDelta>& out, bool final);
  bool step_content(std::vector<ToolCallDelta>& out, bool final);
  bool step_probe(std::vector<ToolCallDelta>& out, bool final);
  bool step_after_marker(std::vector<ToolCallDelta>& out, bool final);
  bool step_object(std::vector<ToolCallDelta>& out);
  bool step_after_object(std::vector<ToolCallDelta>& out, bool final);
  void emit_content(std::vector<ToolCallDelta>& out, std::string_view text);
  void emit_arguments(std::vector<ToolCallDelta>& out, std::string_view text);
  void begin_object();
  void end_object(std::vector<ToolCallDelta>& out);

  ToolFamily family_;
  bool forced_;
  State state_ = State::Content;
  std::string buf_;          // unconsumed input
  bool at_boundary_ = true;  // only whitespace since the start or the last call
  bool in_list_ = false;     // inside [ ... ] of calls
  std::string marker_;       // the opening marker just read (content again if no call follows)
  std::string object_raw_;   // the current call object's text so far (content if not a call)

  // The JSON scanner of the current call object.
  int depth_ = 0;
  bool in_string_ = false, escape_ = false;
  std::string key_;  // the depth-1 key being read or last read
  bool reading_key_ = false, after_colon_ = false;
  enum class Field { None, Name, Args, Other } field_ = Field::None;
  std::string name_raw_;  // the "name" value as JSON text
  std::string args_raw_;  // the arguments value as JSON text
  bool name_done_ = false, args_done_ = false, args_is_string_ = false;
  size_t args_sent_ = 0;  // bytes of args_raw_ already emitted
  bool started_ = false;  // CallStart emitted for the current object

  std::string content_;
  std::vector<ParsedToolCall> calls_;
};

}  // namespace strata::server
