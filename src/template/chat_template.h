// Chat templates: OpenAI-style messages -> prompt text, through the model's Jinja template.
//
// The engine renders templates the way Hugging Face transformers does (Python Jinja2's
// ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks, loop controls, the globals
// raise_exception/strftime_now and a json.dumps-based `tojson`), so a model's
// tokenizer.chat_template produces the same prompt here as in transformers. It is a sandbox: no
// file, network or environment access, and every render is bounded in call depth, loop
// iterations, output size, memory and wall time (TemplateLimits); breaking a bound is a clean
// TemplateError, never a crash or hang.
//
// Usage (the server, per /v1/chat/completions request):
//   ChatTemplate tmpl(source);                       // parse once
//   ChatTemplateOptions opt;
//   opt.add_generation_prompt = true;
//   opt.bos_token = "<s>";
//   std::string prompt = tmpl.render(request["messages"], opt);   // render many, thread-safe
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "template/template_error.h"
#include "template/template_limits.h"

namespace strata {

namespace jinja {
struct TemplateAst;
}

// JSON as chat templates see it. Ordered: Python dicts keep insertion order, and `tojson` of
// a tool definition must list keys as the client sent them, so parse requests with
// nlohmann::ordered_json (a plain nlohmann::json converts, with keys sorted).
using ChatJson = nlohmann::ordered_json;

struct ChatTemplateOptions {
  bool add_generation_prompt = false;
  ChatJson tools = nullptr;      // array of tool definitions, or null (passed as None, as HF does)
  ChatJson documents = nullptr;  // RAG documents, or null (likewise)
  std::string bos_token;         // the model's BOS/EOS token texts
  std::string eos_token;
  // More template variables, e.g. {"enable_thinking": false}. Must be a JSON object.
  ChatJson extra_context = ChatJson::object();
  // strftime_now's clock as Unix seconds, rendered in UTC (tests, reproducible prompts);
  // unset: the current local time.
  std::optional<int64_t> now_unix;

  // content given as an array of parts ([{"type": "text", "text": ...}, ...]):
  enum class ContentParts {
    Flatten,  // join the text parts with "\n" into one string (what most templates expect)
    Keep      // pass the array through (templates that loop over typed content)
  };
  ContentParts content_parts = ContentParts::Flatten;

  // tool_calls[i].function.arguments: OpenAI clients send a JSON *string*, HF templates expect
  // an object (they apply `tojson` to it) and a few concatenate it as a string.
  enum class ToolCallArguments {
    Auto,    // parse JSON strings into objects; if the template then fails, retry as given
    Object,  // parse JSON strings into objects (error if not JSON)
    AsGiven  // pass through unchanged
  };
  ToolCallArguments tool_call_arguments = ToolCallArguments::Auto;

  TemplateLimits limits;
};

class ChatTemplate {
 public:
  // Parses the template; throws TemplateError (Syntax, with the line) on invalid source.
  explicit ChatTemplate(std::string source, const TemplateParseLimits& parse_limits = {});
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;
  ChatTemplate(const ChatTemplate&);
  ChatTemplate& operator=(const ChatTemplate&);

  const std::string& source() const { return source_; }

  // Renders `messages` (array of {role, content, tool_calls, tool_call_id, name, ...}) with the
  // variables HF passes: messages, tools, documents, add_generation_prompt, bos_token,
  // eos_token, plus options.extra_context. Throws strata::Error for malformed messages and
  // TemplateError for failures inside the template (raise_exception, limits, type errors).
  std::string render(const ChatJson& messages, const ChatTemplateOptions& options = {}) const;

  // Renders with exactly the given variables (a JSON object), no message preprocessing.
  std::string render_context(const ChatJson& context, const TemplateLimits& limits = {},
                             std::optional<int64_t> now_unix = std::nullopt) const;

 private:
  std::string source_;
  std::shared_ptr<const jinja::TemplateAst> ast_;
};

// The default template for models without one: ChatML, as Qwen, Hermes and SmolLM use it:
//   <|im_start|>{role}\n{content}<|im_end|>\n   for each message, then
//   <|im_start|>assistant\n                     when add_generation_prompt is set.
// Content given as text parts is concatenated; messages without text content print empty.
const std::string& chatml_template_source();

// The model's template when it has a non-empty one, else ChatML; logs (info) which one is
// used and why. `model_name` only names the model in that log line.
ChatTemplate make_chat_template(const std::optional<std::string>& model_template,
                                std::string_view model_name);

}  // namespace strata
