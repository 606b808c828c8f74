#include "template/chat_template.h"

#include "core/log.h"
#include "template/builtins.h"
#include "template/interpreter.h"
#include "template/parser.h"

namespace strata {

namespace {

// Content parts -> one string: the text parts joined by newlines (as vLLM does).
ChatJson flatten_content(const ChatJson& parts) {
  std::string text;
  bool first = true;
  for (const ChatJson& part : parts) {
    if (!part.is_object()) STRATA_THROW("message content parts must be objects");
    const auto type = part.find("type");
    if (type == part.end() || !type->is_string() || type->get<std::string>() != "text") {
      const std::string name = type != part.end() && type->is_string() ? type->get<std::string>() : "?";
      STRATA_THROW("content part of type '", name, "' is not supported (text only)");
    }
    const auto t = part.find("text");
    if (t == part.end() || !t->is_string()) STRATA_THROW("text content part without a 'text' string");
    if (!first) text += "\n";
    first = false;
    text += t->get<std::string>();
  }
  return text;
}

// Parses tool_calls[].function.arguments JSON strings into objects; with `strict`, a string
// that is not JSON is an error, otherwise it stays a string.
void parse_tool_arguments(ChatJson& message, bool strict) {
  auto calls = message.find("tool_calls");
  if (calls == message.end() || !calls->is_array()) return;
  for (ChatJson& call : *calls) {
    if (!call.is_object()) continue;
    auto fn = call.find("function");
    if (fn == call.end() || !fn->is_object()) continue;
    auto args = fn->find("arguments");
    if (args == fn->end() || !args->is_string()) continue;
    ChatJson parsed = ChatJson::parse(args->get<std::string>(), nullptr, false);
    if (parsed.is_discarded()) {
      if (strict) STRATA_THROW("tool call arguments are not valid JSON");
      continue;
    }
    *args = std::move(parsed);
  }
}

ChatJson normalize_messages(const ChatJson& messages, const ChatTemplateOptions& o, bool parse_arguments) {
  if (!messages.is_array()) STRATA_THROW("messages must be a JSON array");
  ChatJson out = messages;
  for (ChatJson& m : out) {
    if (!m.is_object()) STRATA_THROW("each message must be a JSON object");
    const auto role = m.find("role");
    if (role == m.end() || !role->is_string()) STRATA_THROW("each message needs a string 'role'");
    auto content = m.find("content");
    if (content != m.end() && content->is_array() &&
        o.content_parts == ChatTemplateOptions::ContentParts::Flatten)
      *content = flatten_content(*content);
    if (parse_arguments)
      parse_tool_arguments(m, o.tool_call_arguments == ChatTemplateOptions::ToolCallArguments::Object);
  }
  return out;
}

bool has_string_arguments(const ChatJson& messages) {
  for (const ChatJson& m : messages) {
    if (!m.is_object() || !m.contains("tool_calls") || !m["tool_calls"].is_array()) continue;
    for (const ChatJson& c : m["tool_calls"])
      if (c.is_object() && c.contains("function") && c["function"].is_object() &&
          c["function"].contains("arguments") && c["function"]["arguments"].is_string())
        return true;
  }
  return false;
}

}  // namespace

ChatTemplate::ChatTemplate(std::string source, const TemplateParseLimits& parse_limits)
    : source_(std::move(source)),
      ast_(std::make_shared<const jinja::TemplateAst>(jinja::parse_template(source_, parse_limits))) {}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::ChatTemplate(const ChatTemplate&) = default;
ChatTemplate& ChatTemplate::operator=(const ChatTemplate&) = default;

std::string ChatTemplate::render_context(const ChatJson& context, const TemplateLimits& limits,
                                         std::optional<int64_t> now_unix) const {
  if (!context.is_object()) STRATA_THROW("template context must be a JSON object");
  auto globals = std::make_shared<jinja::Scope>(nullptr);
  jinja::add_builtin_globals(*globals);
  auto vars = std::make_shared<jinja::Scope>(globals.get());
  for (auto it = context.begin(); it != context.end(); ++it) {
    try {
      vars->set(it.key(), jinja::from_json(it.value(), limits.max_value_depth));
    } catch (const TemplateError&) {
      throw;
    } catch (const Error& e) {
      const bool too_deep = std::string_view(e.what()).find("nested deeper") != std::string_view::npos;
      throw TemplateError(too_deep ? TemplateError::Kind::LimitExceeded : TemplateError::Kind::Runtime, 0,
                          concat("variable '", it.key(), "': ", e.what()));
    }
  }
  jinja::Interpreter interpreter(limits, now_unix);
  return interpreter.render(*ast_, vars);
}

std::string ChatTemplate::render(const ChatJson& messages, const ChatTemplateOptions& o) const {
  if (!o.extra_context.is_object()) STRATA_THROW("extra template variables must be a JSON object");
  if (!o.tools.is_null() && !o.tools.is_array()) STRATA_THROW("tools must be a JSON array or null");
  const bool auto_args = o.tool_call_arguments == ChatTemplateOptions::ToolCallArguments::Auto;
  const bool parse_args = o.tool_call_arguments != ChatTemplateOptions::ToolCallArguments::AsGiven;
  auto build = [&](bool parse) {
    ChatJson ctx = ChatJson::object();
    ctx["bos_token"] = o.bos_token;
    ctx["eos_token"] = o.eos_token;
    for (auto it = o.extra_context.begin(); it != o.extra_context.end(); ++it) ctx[it.key()] = it.value();
    ctx["messages"] = normalize_messages(messages, o, parse);
    ctx["tools"] = o.tools;
    ctx["documents"] = o.documents;
    ctx["add_generation_prompt"] = o.add_generation_prompt;
    return ctx;
  };
  if (!(auto_args && has_string_arguments(messages)))
    return render_context(build(parse_args), o.limits, o.now_unix);
  try {
    return render_context(build(true), o.limits, o.now_unix);
  } catch (const TemplateError& first) {
    // Templates that concatenate the arguments need them as the string the client sent.
    if (first.kind() != TemplateError::Kind::Runtime) throw;
    try {
      return render_context(build(false), o.limits, o.now_unix);
    } catch (const TemplateError&) {
      throw first;
    }
  }
}

const std::string& chatml_template_source() {
  static const std::string kChatMl =
      "{%- for message in messages -%}\n"
      "{{- '<|im_start|>' + message['role'] + '\\n' -}}\n"
      "{%- if message['content'] is string -%}\n"
      "{{- message['content'] -}}\n"
      "{%- elif message['content'] is iterable and message['content'] is not mapping -%}\n"
      "{%- for part in message['content'] if part['type'] == 'text' -%}{{- part['text'] -}}{%- endfor -%}\n"
      "{%- endif -%}\n"
      "{{- '<|im_end|>\\n' -}}\n"
      "{%- endfor -%}\n"
      "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}\n";
  return kChatMl;
}

ChatTemplate make_chat_template(const std::optional<std::string>& model_template,
                                std::string_view model_name) {
  if (model_template && !model_template->empty()) {
    log_info("chat template: using the template of ", model_name);
    return ChatTemplate(*model_template);
  }
  log_info("chat template: ", model_name,
           " has no chat template (tokenizer.chat_template); using the default ChatML template");
  return ChatTemplate(chatml_template_source());
}

}  // namespace strata
