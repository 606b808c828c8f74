#include "server/tool_request.h"

#include "grammar/constraint_spec.h"
#include "grammar/limits.h"
#include "server/api_error.h"

namespace strata::server {
namespace {

bool valid_function_name(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

// Checks one tools[i]; returns its function's name.
std::string check_tool(const ChatJson& t, size_t i) {
  const std::string name = "tools[" + std::to_string(i) + "]";
  if (!t.is_object()) throw invalid_type(name, "'" + name + "' must be an object.");
  const JsonFields tf(t);
  const std::string type = tf.string("type", 64).value_or("function");
  if (type != "function")
    throw invalid_value(name + ".type", "'" + name + ".type' must be 'function', got '" + type + "'.");
  const ChatJson* fn = tf.get("function");
  if (!fn || !fn->is_object())
    throw invalid_value(name + ".function", "'" + name + ".function' must be an object.");
  const JsonFields ff(*fn);
  const auto fname = ff.string("name", 256);
  if (!fname || !valid_function_name(*fname))
    throw invalid_value(name + ".function.name", "'" + name +
                                                     ".function.name' must be 1 to 64 letters, digits, '_', "
                                                     "'-' or '.'.");
  ff.string("description", SIZE_MAX);
  ff.boolean("strict");
  if (const ChatJson* p = ff.get("parameters"); p && !p->is_object())
    throw invalid_type(name + ".function.parameters",
                       "'" + name + ".function.parameters' must be a JSON Schema object.");
  return *fname;
}

// tool_choice; returns the named function ("" for the string forms) and sets `choice`.
std::string parse_choice(const ChatJson& v, std::string& choice) {
  if (v.is_string()) {
    choice = v.get<std::string>();
    if (choice != "none" && choice != "auto" && choice != "required")
      throw invalid_value(
          "tool_choice",
          "'tool_choice' must be 'none', 'auto', 'required' or a function; got '" + choice + "'.");
    return {};
  }
  if (!v.is_object()) throw invalid_type("tool_choice", "'tool_choice' must be a string or an object.");
  const JsonFields f(v);
  const std::string type = f.string("type", 64).value_or("");
  if (type != "function") throw invalid_value("tool_choice.type", "'tool_choice.type' must be 'function'.");
  const ChatJson* fn = f.get("function");
  const auto name = fn && fn->is_object() ? JsonFields(*fn).string("name", 256) : std::nullopt;
  if (!name) throw invalid_value("tool_choice.function.name", "'tool_choice.function.name' is required.");
  choice = "named";
  return *name;
}

// {"name", "parameters"} of a tool, as the call grammar takes it.
ChatJson grammar_tool(const ChatJson& tool) {
  const ChatJson& fn = tool["function"];
  ChatJson t = {{"name", fn["name"]}};
  if (fn.contains("parameters") && !fn["parameters"].is_null()) t["parameters"] = fn["parameters"];
  return t;
}

// How each family's template writes calls, for the grammar of forced calls.
ChatJson call_format(ToolFamily family) {
  switch (family) {
    case ToolFamily::Llama3:
      return {{"args_key", "parameters"}, {"separator", "; "}};
    case ToolFamily::Mistral:
      return {{"list_begin", "["}, {"separator", ", "}, {"list_end", "]"}};
    case ToolFamily::Hermes:
    case ToolFamily::Generic:
      break;
  }
  return {{"call_begin", "<tool_call>\n"}, {"call_end", "\n</tool_call>"}, {"separator", "\n"}};
}

}  // namespace

ToolRequest parse_tool_request(const JsonFields& f, const std::string& template_source) {
  ToolRequest tr;
  const ChatJson* tools = f.get("tools");
  if (tools && !tools->is_array()) throw invalid_type("tools", "'tools' must be an array.");
  if (tools && tools->size() > kMaxTools)
    throw invalid_value("tools", "'tools' may hold at most " + std::to_string(kMaxTools) + " tools.");
  std::vector<std::string> names;
  if (tools)
    for (size_t i = 0; i < tools->size(); ++i) names.push_back(check_tool((*tools)[i], i));
  const bool have_tools = tools && !tools->empty();
  std::string choice = have_tools ? "auto" : "none";
  std::string named;
  if (const ChatJson* c = f.get("tool_choice")) named = parse_choice(*c, choice);
  tr.parallel = f.boolean("parallel_tool_calls").value_or(true);
  if (!have_tools && (choice == "required" || choice == "named"))
    throw invalid_value("tool_choice", "'tool_choice' '" + choice + "' needs 'tools'.");
  if (choice == "none" || !have_tools) return tr;
  tr.mode.parse = true;
  tr.mode.family = detect_tool_family(template_source);
  tr.inject_prompt = template_source.find("tools") == std::string::npos;
  if (!tr.inject_prompt) tr.template_tools = *tools;
  if (choice == "required") {
    tr.mode.forced = true;
    tr.forced_tools = ChatJson::array();
    for (const ChatJson& t : *tools) tr.forced_tools.push_back(grammar_tool(t));
  } else if (choice == "named") {
    const auto it = std::find(names.begin(), names.end(), named);
    if (it == names.end())
      throw invalid_value("tool_choice.function.name",
                          "'tool_choice' names '" + named + "', which is not in 'tools'.");
    tr.mode.forced = true;
    tr.parallel = false;  // exactly the one function
    tr.forced_tools = ChatJson::array({grammar_tool((*tools)[static_cast<size_t>(it - names.begin())])});
  }
  return tr;
}

namespace {

// The text of a message's content (string, or text parts joined), "" when absent.
std::string content_text(const ChatJson& m) {
  const auto it = m.find("content");
  if (it == m.end() || it->is_null()) return {};
  if (it->is_string()) return it->get<std::string>();
  std::string out;
  for (const ChatJson& part : *it)
    if (part.is_object() && part.contains("text") && part["text"].is_string())
      out += (out.empty() ? "" : "\n") + part["text"].get<std::string>();
  return out;
}

// An assistant turn's calls written the way the prompt asks the model to write them.
std::string calls_text(const ChatJson& calls) {
  std::string out;
  for (const ChatJson& c : calls) {
    if (!c.is_object() || !c.contains("function") || !c["function"].is_object()) continue;
    const ChatJson& fn = c["function"];
    ChatJson args = fn.value("arguments", ChatJson::object());
    if (args.is_string()) {
      ChatJson parsed = ChatJson::parse(args.get<std::string>(), nullptr, false);
      if (!parsed.is_discarded()) args = std::move(parsed);
    }
    out += "<tool_call>\n" + ChatJson{{"name", fn.value("name", "")}, {"arguments", args}}.dump() +
           "\n</tool_call>\n";
  }
  return out;
}

}  // namespace

ChatJson with_tool_prompt(const ChatJson& messages, const ChatJson& tools) {
  std::string prompt =
      "You can call the following tools. Each is given as JSON: its name, description and the JSON Schema of "
      "its arguments.\n";
  for (const ChatJson& t : tools) prompt += t["function"].dump() + "\n";
  prompt +=
      "To call a tool, answer with one block per call and nothing else:\n<tool_call>\n{\"name\": \"NAME\", "
      "\"arguments\": {ARGUMENTS}}\n</tool_call>\nTool results come back in <tool_response> blocks.\n\n";
  // Calls become assistant text and results user text (these templates know neither), and
  // turns of one role in a row are merged, for templates that insist roles alternate.
  ChatJson out = ChatJson::array();
  bool prompted = false;
  for (const ChatJson& m : messages) {
    std::string role = m.value("role", "user");
    std::string text = content_text(m);
    if (role == "assistant" && m.contains("tool_calls") && m["tool_calls"].is_array())
      text += (text.empty() ? "" : "\n") + calls_text(m["tool_calls"]);
    if (role == "tool" || role == "function") {
      role = "user";
      text = "<tool_response>\n" + text + "\n</tool_response>";
    }
    if (role == "user" && !prompted) {
      text = prompt + text;
      prompted = true;
    }
    if (!out.empty() && out.back()["role"] == role && role != "system") {
      out.back()["content"] = out.back()["content"].get<std::string>() + "\n\n" + text;
      continue;
    }
    out.push_back({{"role", role}, {"content", text}});
  }
  if (!prompted) out.push_back({{"role", "user"}, {"content", prompt}});
  return out;
}

void apply_tool_constraint(const ToolRequest& tr, const ServedModel& model, GenerationRequest& req) {
  if (!tr.mode.forced) return;
  if (req.params.constraint)
    throw invalid_value(
        "tool_choice",
        "'tool_choice' 'required' or a named function cannot be combined with structured output.");
  if (!model.constraints)
    throw invalid_value("tool_choice", "Forced tool calls are not available for this model.");
  grammar::ConstraintSpec spec;
  spec.kind = grammar::ConstraintKind::ToolCalls;
  spec.schema = call_format(tr.mode.family);
  spec.schema["parallel"] = tr.parallel;
  spec.schema["tools"] = tr.forced_tools;
  try {
    req.params.constraint = model.constraints->get(spec);
  } catch (const grammar::GrammarError& e) {
    throw invalid_value("tools", std::string("Invalid tool parameters: ") + e.what());
  }
}

}  // namespace strata::server
