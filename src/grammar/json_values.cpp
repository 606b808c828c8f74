#include "grammar/json_values.h"

#include "grammar/limits.h"

namespace strata::grammar {

ExprId JsonBuilder::shared_rule(int32_t& rule, const char* name, ExprId (JsonBuilder::*body)()) {
  if (rule < 0) {
    // Declared before its body is built: the value rule refers to itself.
    rule = ast_.add_rule(prefix_ + name, -1, /*shared=*/true);
    const ExprId b = (this->*body)();
    ast_.rules[static_cast<size_t>(rule)].body = b;
  }
  return ast_.ref(rule);
}

ExprId JsonBuilder::ws() {
  return shared_rule(ws_, "ws", &JsonBuilder::ws_body);
}

ExprId JsonBuilder::ws_body() {
  CodepointSet blank(' ');
  blank.add('\t');
  const ExprId newline_indent = ast_.seq({ast_.literal("\n"), ast_.repeat(ast_.chars(blank), 0, 20)});
  return ast_.repeat(ast_.alt({ast_.literal(" "), newline_indent}), 0, 1);
}

ExprId JsonBuilder::string_char() {
  if (string_char_ >= 0) return string_char_;
  const ExprId hex = ast_.chars([] {
    CodepointSet s('0', '9');
    s.add('a', 'f');
    s.add('A', 'F');
    return s;
  }());
  // \uXXXX without surrogates: D800..DFFF would count twice (or not pair) in Python.
  CodepointSet not_d('0', '9');
  not_d.add('a', 'c');
  not_d.add('e', 'f');
  not_d.add('A', 'C');
  not_d.add('E', 'F');
  CodepointSet d('d');
  d.add('D');
  const ExprId u4 = ast_.alt({ast_.seq({ast_.chars(not_d), hex, hex, hex}),
                              ast_.seq({ast_.chars(d), ast_.chars(CodepointSet('0', '7')), hex, hex})});
  const ExprId escape =
      ast_.seq({ast_.literal("\\"), ast_.alt({ast_.literal("/"), ast_.seq({ast_.literal("u"), u4})})});
  string_char_ = ast_.alt({ast_.chars(CodepointSet::any(), /*json_escape=*/true), escape});
  return string_char_;
}

ExprId JsonBuilder::string() {
  return shared_rule(string_, "string", &JsonBuilder::string_body);
}

ExprId JsonBuilder::string_body() {
  return ast_.seq({ast_.literal("\""), ast_.repeat(string_char(), 0, kUnbounded), ast_.literal("\"")});
}

ExprId JsonBuilder::string_of_length(int32_t min, int32_t max) {
  if (min == 0 && max == kUnbounded) return string();
  auto [it, fresh] = length_rules_.emplace(std::make_pair(min, max), -1);
  if (fresh) {
    const ExprId body =
        ast_.seq({ast_.literal("\""), ast_.repeat(string_char(), min, max), ast_.literal("\"")});
    it->second = ast_.add_rule(
        prefix_ + "string-" + std::to_string(min) + "-" + (max == kUnbounded ? "" : std::to_string(max)),
        body, /*shared=*/true);
  }
  return ast_.ref(it->second);
}

ExprId JsonBuilder::quoted(const std::string& text) {
  return literal(nlohmann::ordered_json(text));
}

ExprId JsonBuilder::literal(const nlohmann::ordered_json& value) {
  try {
    return ast_.literal(value.dump());
  } catch (const nlohmann::json::exception&) {
    STRATA_GRAMMAR_THROW("a value in the schema is not valid UTF-8");
  }
}

ExprId JsonBuilder::digits(int32_t min, int32_t max) {
  return ast_.repeat(ast_.chars(CodepointSet('0', '9')), min, max);
}

ExprId JsonBuilder::integer() {
  return shared_rule(integer_, "integer", &JsonBuilder::integer_body);
}

ExprId JsonBuilder::integer_body() {
  const ExprId magnitude =
      ast_.alt({lit("0"), ast_.seq({ast_.chars(CodepointSet('1', '9')), digits(0, 15)})});
  return ast_.seq({ast_.repeat(lit("-"), 0, 1), magnitude});
}

ExprId JsonBuilder::number() {
  return shared_rule(number_, "number", &JsonBuilder::number_body);
}

ExprId JsonBuilder::number_body() {
  CodepointSet e('e');
  e.add('E');
  CodepointSet sign('+');
  sign.add('-');
  const ExprId fraction = ast_.repeat(ast_.seq({lit("."), digits(1, 16)}), 0, 1);
  const ExprId exponent =
      ast_.repeat(ast_.seq({ast_.chars(e), ast_.repeat(ast_.chars(sign), 0, 1), digits(1, 2)}), 0, 1);
  return ast_.seq({integer_body(), fraction, exponent});
}

ExprId JsonBuilder::boolean() {
  return ast_.alt({lit("true"), lit("false")});
}
ExprId JsonBuilder::null() {
  return lit("null");
}

ExprId JsonBuilder::comma() {
  if (comma_ < 0) comma_ = ast_.seq({ws(), lit(","), ws()});
  return comma_;
}

ExprId JsonBuilder::colon() {
  if (colon_ < 0) colon_ = ast_.seq({ws(), lit(":"), ws()});
  return colon_;
}

ExprId JsonBuilder::value() {
  return shared_rule(value_, "value", &JsonBuilder::value_body);
}

ExprId JsonBuilder::value_body() {
  return ast_.alt({object(), array(), string(), number(), boolean(), null()});
}

ExprId JsonBuilder::object() {
  const ExprId member = ast_.seq({string(), colon(), value()});
  const ExprId members = ast_.seq({member, ast_.repeat(ast_.seq({comma(), member}), 0, kUnbounded), ws()});
  return ast_.seq({lit("{"), ws(), ast_.repeat(members, 0, 1), lit("}")});
}

ExprId JsonBuilder::array() {
  const ExprId items = ast_.seq({value(), ast_.repeat(ast_.seq({comma(), value()}), 0, kUnbounded), ws()});
  return ast_.seq({lit("["), ws(), ast_.repeat(items, 0, 1), lit("]")});
}

GrammarAst json_object_grammar() {
  GrammarAst ast;
  JsonBuilder json(ast);
  const int32_t root = ast.add_rule("root", -1);
  ast.rules[static_cast<size_t>(root)].body = json.object();
  ast.root = root;
  return ast;
}

}  // namespace strata::grammar
