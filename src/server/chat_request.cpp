// /v1/chat/completions: messages validated, rendered through the chat template, tokenized.
#include <set>

#include "core/check.h"
#include "server/api_error.h"
#include "server/common_fields.h"
#include "server/generation_request.h"
#include "server/structured_output.h"
#include "server/tool_request.h"

namespace strata::server {
namespace {

constexpr size_t kMaxMessages = 4096;
constexpr int32_t kMaxTopLogprobs = 20;  // as OpenAI

void check_content_parts(const ChatJson& parts, const std::string& name) {
  for (size_t i = 0; i < parts.size(); ++i) {
    const ChatJson& part = parts[i];
    const std::string pname = name + "[" + std::to_string(i) + "]";
    if (!part.is_object()) throw invalid_type(pname, "'" + pname + "' must be an object.");
    const JsonFields pf(part);
    const auto type = pf.string("type", 64);
    if (!type) throw invalid_value(pname + ".type", "'" + pname + ".type' is required.");
    if (*type != "text")
      throw invalid_value(pname + ".type", "Content parts of type '" + *type +
                                               "' are not supported by this model (only 'text').");
    if (!pf.string("text", SIZE_MAX))
      throw invalid_value(pname + ".text", "'" + pname + ".text' is required.");
  }
}

void check_message(const ChatJson& m, size_t i) {
  static const std::set<std::string> kRoles = {"system",    "developer", "user",
                                               "assistant", "tool",      "function"};
  const std::string name = "messages[" + std::to_string(i) + "]";
  if (!m.is_object())
    throw invalid_type(name, "'" + name + "' must be an object, got " + json_type_phrase(m) + ".");
  const JsonFields f(m);
  const auto role = f.string("role", 64);
  if (!role) throw invalid_value(name + ".role", "'" + name + ".role' is required.");
  if (!kRoles.count(*role))
    throw invalid_value(name + ".role", "'" + name +
                                            ".role' must be one of system, developer, user, assistant, "
                                            "tool, function; got '" +
                                            *role + "'.");
  const ChatJson* content = f.get("content");
  if (!content) {
    // Only an assistant turn that made tool calls (or a refusal) may come without content.
    if (*role != "assistant")
      throw invalid_value(name + ".content", "'" + name + ".content' is required for role '" + *role + "'.");
  } else if (content->is_array()) {
    check_content_parts(*content, name + ".content");
  } else if (!content->is_string()) {
    throw invalid_type(name + ".content",
                       "'" + name + ".content' must be a string or an array of content parts.");
  }
  if (const ChatJson* calls = f.get("tool_calls"); calls && !calls->is_array())
    throw invalid_type(name + ".tool_calls", "'" + name + ".tool_calls' must be an array.");
}

ChatTemplateOptions template_options(const JsonFields& f, const Tokenizer& tok, const ToolRequest& tools) {
  ChatTemplateOptions opt;
  opt.add_generation_prompt = f.boolean("add_generation_prompt").value_or(true);  // vLLM's extension
  if (tok.bos() >= 0) opt.bos_token = std::string(tok.token_text(tok.bos()));
  if (tok.eos() >= 0) opt.eos_token = std::string(tok.token_text(tok.eos()));
  opt.tools = tools.template_tools;
  if (const ChatJson* kwargs = f.get("chat_template_kwargs")) {  // vLLM's extension
    if (!kwargs->is_object())
      throw invalid_type("chat_template_kwargs", "'chat_template_kwargs' must be an object.");
    opt.extra_context = *kwargs;
  }
  return opt;
}

PromptInput render_with_tools(const ChatJson& body, const ServedModel& model, const ToolRequest& tools) {
  STRATA_CHECK(model.tokenizer && model.chat_template);
  const JsonFields f(body);
  const ChatJson* messages = f.get("messages");
  if (!messages) throw invalid_value("messages", "'messages' is required.");
  if (!messages->is_array())
    throw invalid_type("messages",
                       std::string("'messages' must be an array, got ") + json_type_phrase(*messages) + ".");
  if (messages->empty()) throw invalid_value("messages", "'messages' must not be empty.");
  if (messages->size() > kMaxMessages)
    throw invalid_value("messages",
                        "'messages' may hold at most " + std::to_string(kMaxMessages) + " messages.");
  for (size_t i = 0; i < messages->size(); ++i) check_message((*messages)[i], i);
  const Tokenizer& tok = *model.tokenizer;
  PromptInput input;
  try {
    const ChatTemplateOptions opt = template_options(f, tok, tools);
    input.text = tools.inject_prompt
                     ? model.chat_template->render(with_tool_prompt(*messages, *f.get("tools")), opt)
                     : model.chat_template->render(*messages, opt);
  } catch (const ApiError&) {
    throw;
  } catch (const Error& e) {  // TemplateError and malformed messages: the client's input
    throw invalid_value("messages", e.what());
  }
  // The template writes the special tokens itself (BOS included when the model wants one);
  // adding BOS here only when it did not avoids a doubled BOS.
  input.tokens = tok.encode(input.text, /*add_special=*/false, /*parse_special=*/true);
  if (tok.add_bos() && tok.bos() >= 0 && (input.tokens.empty() || input.tokens.front() != tok.bos()))
    input.tokens.insert(input.tokens.begin(), tok.bos());
  return input;
}

}  // namespace

PromptInput render_chat_prompt(const ChatJson& body, const ServedModel& model) {
  STRATA_CHECK(model.chat_template);
  return render_with_tools(body, model, parse_tool_request(JsonFields(body), model.chat_template->source()));
}

GenerationRequest parse_chat_request(const ChatJson& body, const ServedModel& model) {
  const JsonFields f(body);
  GenerationRequest req;
  req.endpoint = Endpoint::ChatCompletions;
  const std::optional<int32_t> max_tokens = parse_common_fields(f, model, req);
  if (f.boolean("logprobs").value_or(false)) {
    req.logprobs = LogprobsFormat::Chat;
    req.params.top_logprobs = static_cast<int32_t>(f.integer("top_logprobs", 0, kMaxTopLogprobs).value_or(0));
  } else if (f.has("top_logprobs")) {
    f.integer("top_logprobs", 0, kMaxTopLogprobs);
    throw invalid_value("top_logprobs", "'top_logprobs' requires 'logprobs' to be true.");
  }
  STRATA_CHECK(model.chat_template);
  const ToolRequest tools = parse_tool_request(f, model.chat_template->source());
  req.tool_calls = tools.mode;
  req.prompts.push_back(render_with_tools(body, model, tools));
  resolve_output_limit(req, model, max_tokens, /*default_fills_context=*/true);
  parse_structured_output(f, model, req);  // last: compiling is the costly part
  apply_tool_constraint(tools, model, req);
  return req;
}

}  // namespace strata::server
