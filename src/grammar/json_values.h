// Grammar pieces of JSON text (RFC 8259) for the JSON-Schema compiler and json_object mode.
//
// Numbers are bounded in size (integer part up to 16 digits, fraction up to 16, exponent up
// to 2) and whitespace between tokens is limited as in llama.cpp's generated grammars (nothing,
// one space, or a newline and up to 20 spaces or tabs), so that a model cannot run on forever
// inside a number or a gap. String characters are any code point, with '"', '\' and control
// characters escaped, plus the escapes \/ and \uXXXX (not surrogates, so every character
// counts once, as Python's len() does).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "grammar/expr.h"

namespace strata::grammar {

class JsonBuilder {
 public:
  // Rules it creates are named prefix + "ws", prefix + "string", ...
  explicit JsonBuilder(GrammarAst& ast, std::string prefix = "") : ast_(ast), prefix_(std::move(prefix)) {}

  ExprId ws();       // the shared whitespace rule
  ExprId string();   // the shared rule of any JSON string
  ExprId integer();  // the shared rule of any (bounded-size) integer
  ExprId number();   // the shared rule of any (bounded-size) number
  ExprId value();    // the recursive rule of any JSON value
  ExprId object();   // any JSON object
  ExprId array();    // any JSON array
  ExprId boolean();
  ExprId null();

  // One character inside a JSON string, as one of its encodings.
  ExprId string_char();
  // A string of min..max characters (max kUnbounded for none): one shared rule per length
  // range, however often it is used.
  ExprId string_of_length(int32_t min, int32_t max);
  // `value` as compact JSON text.
  ExprId literal(const nlohmann::ordered_json& value);
  // A JSON string literal of `text`.
  ExprId quoted(const std::string& text);
  // "," with whitespace around it; ":" likewise.
  ExprId comma();
  ExprId colon();
  ExprId lit(const char* s) { return ast_.literal(s); }

  GrammarAst& ast() { return ast_; }
  const std::string& prefix() const { return prefix_; }

 private:
  // A reference to the shared rule `rule`, created on first use.
  ExprId shared_rule(int32_t& rule, const char* name, ExprId (JsonBuilder::*body)());
  ExprId ws_body();
  ExprId string_body();
  ExprId integer_body();
  ExprId number_body();
  ExprId value_body();
  ExprId digits(int32_t min, int32_t max);

  GrammarAst& ast_;
  std::string prefix_;
  int32_t ws_ = -1, string_ = -1, integer_ = -1, number_ = -1, value_ = -1;
  ExprId string_char_ = -1, comma_ = -1, colon_ = -1;
  std::map<std::pair<int32_t, int32_t>, int32_t> length_rules_;
};

// Any JSON object: the grammar of OpenAI's response_format {"type": "json_object"}.
GrammarAst json_object_grammar();

}  // namespace strata::grammar
