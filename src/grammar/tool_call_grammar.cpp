#include "grammar/tool_call_grammar.h"

#include "grammar/json_schema.h"
#include "grammar/limits.h"

namespace strata::grammar {
namespace {

using Json = nlohmann::ordered_json;

std::string text_field(const Json& spec, const char* key) {
  const auto it = spec.find(key);
  if (it == spec.end()) return {};
  if (!it->is_string()) STRATA_GRAMMAR_THROW("tool-call grammar: '", key, "' must be a string");
  return it->get<std::string>();
}

// {"name": "NAME", "ARGS_KEY": ARGS}, ARGS valid against the tool's parameters.
ExprId call_expr(GrammarAst& ast, const Json& tool, size_t index, const std::string& args_key) {
  if (!tool.is_object() || !tool.contains("name") || !tool["name"].is_string())
    STRATA_GRAMMAR_THROW("tool-call grammar: every tool needs a string 'name'");
  const std::string name = tool["name"].get<std::string>();
  static const Json kAnyObject = {{"type", "object"}};
  const auto params = tool.find("parameters");
  const Json& schema = params == tool.end() || params->is_null() ? kAnyObject : *params;
  // Each tool's rules get their own prefix: two tools' schemas never share a rule name.
  const ExprId args = add_json_schema(ast, schema, "tool" + std::to_string(index) + "-");
  // The name is written as JSON text (dump escapes quotes and control characters).
  return ast.seq({ast.literal("{\"name\": " + Json(name).dump() + ", " + Json(args_key).dump() + ": "), args,
                  ast.literal("}")});
}

// A literal, or the empty expression for "" (framing pieces a format does not use).
ExprId text(GrammarAst& ast, const std::string& s) {
  return s.empty() ? ast.empty() : ast.literal(s);
}

}  // namespace

GrammarAst tool_call_grammar(const Json& spec) {
  if (!spec.is_object()) STRATA_GRAMMAR_THROW("tool-call grammar: the spec must be an object");
  const auto tools = spec.find("tools");
  if (tools == spec.end() || !tools->is_array() || tools->empty())
    STRATA_GRAMMAR_THROW("tool-call grammar: 'tools' must be a non-empty array");
  if (tools->size() > kMaxToolsInGrammar)
    STRATA_GRAMMAR_THROW("tool-call grammar: more than ", kMaxToolsInGrammar, " tools");
  std::string args_key = text_field(spec, "args_key");
  if (args_key.empty()) args_key = "arguments";
  const auto parallel = spec.find("parallel");
  if (parallel != spec.end() && !parallel->is_boolean())
    STRATA_GRAMMAR_THROW("tool-call grammar: 'parallel' must be a boolean");
  GrammarAst ast;
  std::vector<ExprId> calls;
  for (size_t i = 0; i < tools->size(); ++i) calls.push_back(call_expr(ast, (*tools)[i], i, args_key));
  const ExprId body = ast.alt(std::move(calls));
  const int32_t call_rule = ast.add_rule("call", ast.seq({text(ast, text_field(spec, "call_begin")), body,
                                                          text(ast, text_field(spec, "call_end"))}));
  ExprId list = ast.ref(call_rule);
  if (parallel != spec.end() && parallel->get<bool>())
    list = ast.seq({list, ast.repeat(ast.seq({text(ast, text_field(spec, "separator")), ast.ref(call_rule)}),
                                     0, kUnbounded)});
  ast.root = ast.add_rule("root", ast.seq({text(ast, text_field(spec, "list_begin")), list,
                                           text(ast, text_field(spec, "list_end"))}));
  return ast;
}

}  // namespace strata::grammar
