// Jinja tokenizer with Hugging Face's settings: trim_blocks and lstrip_blocks on,
// keep_trailing_newline off, `{%-`/`-%}` and `{%+`/`+%}` whitespace control, raw blocks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::jinja {

enum class TokenKind : uint8_t {
  Text,
  VarBegin,
  VarEnd,
  BlockBegin,
  BlockEnd,
  Name,
  String,
  Integer,
  Float,
  Op,
  Eof
};

struct Token {
  TokenKind kind = TokenKind::Eof;
  std::string text;  // Text: the data; Name: the identifier; String: the decoded value; Op: the operator
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
};

// Splits template source into tokens. Comments are dropped, raw blocks become Text.
// Throws TemplateError (Syntax) with the line of the problem.
std::vector<Token> tokenize(std::string_view source);

}  // namespace strata::jinja
