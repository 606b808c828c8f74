// libFuzzer target for the chat-template engine: the input is template source (a hostile GGUF's
// tokenizer.chat_template). Parsing and rendering it against a fixed conversation must end in
// output or a strata::Error, never a crash, hang or unbounded allocation.
#include <cstddef>
#include <cstdint>
#include <string>

#include "template/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const strata::ChatJson kMessages = strata::ChatJson::parse(R"([
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "Hi \u00e9"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "abcdefghi", "type": "function",
      "function": {"name": "f", "arguments": "{\"a\": [1, 2.5, null]}"}}]},
    {"role": "tool", "tool_call_id": "abcdefghi", "content": "42"},
    {"role": "user", "content": [{"type": "text", "text": "parts"}]}])");
  static const strata::ChatJson kTools = strata::ChatJson::parse(R"([{"type": "function", "function": {
    "name": "f", "description": "d", "parameters": {"type": "object", "properties": {"a": {"type": "array"}}}}}])");
  strata::ChatTemplateOptions opt;
  opt.add_generation_prompt = (size & 1) != 0;
  opt.tools = (size & 2) ? kTools : strata::ChatJson(nullptr);
  opt.bos_token = "<s>";
  opt.eos_token = "</s>";
  opt.now_unix = 0;
  // Tight limits keep each input fast; the limits themselves are what is being exercised.
  opt.limits.max_time_ms = 250;
  opt.limits.max_loop_iterations = 100000;
  opt.limits.max_output_bytes = 1 << 20;
  opt.limits.max_alloc_bytes = 64u << 20;
  try {
    const strata::ChatTemplate t(std::string(reinterpret_cast<const char*>(data), size));
    (void)t.render(kMessages, opt);
  } catch (const strata::Error&) {
  }
  return 0;
}
