#include "grammar/gbnf_parser.h"

#include "grammar/limits.h"
#include "grammar/utf8_reader.h"

namespace strata::grammar {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : text_(text) {}

  GrammarAst parse() {
    if (text_.size() > kMaxGrammarBytes)
      STRATA_GRAMMAR_THROW("the grammar is longer than ", kMaxGrammarBytes, " bytes");
    skip_space(true);
    while (!at_end()) parse_rule();
    for (size_t i = 0; i < ast_.rules.size(); ++i)
      if (ast_.rules[i].body < 0)
        fail_at(where(first_ref_[i]), "undefined rule '" + ast_.rules[i].name + "'");
    ast_.root = ast_.find_rule("root");
    if (ast_.root < 0) STRATA_GRAMMAR_THROW("the grammar has no 'root' rule");
    return std::move(ast_);
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  struct SourcePos {
    int32_t line = 1, col = 1;
  };
  // Computed only for an error message (a linear scan).
  SourcePos where(size_t offset) const {
    SourcePos p;
    for (size_t i = 0; i < offset && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++p.line;
        p.col = 1;
      } else if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) {
        ++p.col;  // columns count characters, not UTF-8 continuation bytes
      }
    }
    return p;
  }
  [[noreturn]] void fail_at(SourcePos p, const std::string& msg) const {
    STRATA_GRAMMAR_THROW("line ", p.line, ", column ", p.col, ": ", msg);
  }
  [[noreturn]] void fail(const std::string& msg) const { fail_at(where(pos_), msg); }

  // Spaces, tabs and comments; newlines too when `newline_ok` (inside parentheses, after
  // '|' or '::=').
  void skip_space(bool newline_ok) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || (newline_ok && (c == '\r' || c == '\n'))) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n' && peek() != '\r') ++pos_;
      } else {
        break;
      }
    }
  }

  // The rule's index; a new rule remembers where it was first named.
  int32_t declare(std::string_view name, size_t at) {
    const int32_t rule = ast_.rule_index(name);
    if (static_cast<size_t>(rule) >= first_ref_.size()) first_ref_.push_back(at);
    return rule;
  }

  std::string_view parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    if (pos_ == start) fail("expected a rule name");
    return text_.substr(start, pos_ - start);
  }

  void parse_rule() {
    const size_t at = pos_;
    const std::string_view name = parse_name();
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=")
      fail("expected '::=' after the rule name '" + std::string(name) + "'");
    pos_ += 3;
    skip_space(true);
    const int32_t rule = declare(name, at);
    if (ast_.rules[static_cast<size_t>(rule)].body >= 0)
      fail_at(where(at), "rule '" + std::string(name) + "' is defined twice");
    const ExprId body = parse_alternatives(false, 0);
    ast_.rules[static_cast<size_t>(rule)].body = body;
    if (peek() == '\r') ++pos_;
    if (peek() == '\n')
      ++pos_;
    else if (!at_end())
      fail(std::string("expected the end of the rule, got '") + peek() + "'");
    skip_space(true);
  }

  ExprId parse_alternatives(bool nested, int depth) {
    std::vector<ExprId> alts{parse_sequence(nested, depth)};
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      alts.push_back(parse_sequence(nested, depth));
    }
    return ast_.alt(std::move(alts));
  }

  ExprId parse_sequence(bool nested, int depth) {
    std::vector<ExprId> items;
    for (;;) {
      const char c = peek();
      if (c == '"') {
        items.push_back(parse_literal());
      } else if (c == '[') {
        items.push_back(parse_class());
      } else if (c == '.') {
        ++pos_;
        items.push_back(ast_.chars(CodepointSet::any()));
      } else if (c == '(') {
        if (depth >= kMaxNesting) fail("parentheses nested deeper than " + std::to_string(kMaxNesting));
        ++pos_;
        skip_space(true);
        items.push_back(parse_alternatives(true, depth + 1));
        if (peek() != ')') fail("expected ')'");
        ++pos_;
      } else if (c == '<') {
        fail("token references (<...>) are not supported");
      } else if (is_name_char(c)) {
        const size_t at = pos_;
        items.push_back(ast_.ref(declare(parse_name(), at)));
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (items.empty()) fail(std::string("'") + c + "' must follow an item to repeat");
        items.back() = parse_repetition(items.back(), nested);
        continue;  // parse_repetition skipped the space after it
      } else {
        break;
      }
      skip_space(nested);
    }
    return ast_.seq(std::move(items));
  }

  ExprId parse_repetition(ExprId item, bool nested) {
    const char c = peek();
    ++pos_;
    int32_t min = 0, max = kUnbounded;
    if (c == '+')
      min = 1;
    else if (c == '?')
      max = 1;
    else if (c == '{') {
      skip_space(nested);
      min = parse_count();
      skip_space(nested);
      max = min;
      if (peek() == ',') {
        ++pos_;
        skip_space(nested);
        max = (peek() >= '0' && peek() <= '9') ? parse_count() : kUnbounded;
        skip_space(nested);
      }
      if (peek() != '}') fail("expected '}' to close the repetition");
      ++pos_;
      if (max != kUnbounded && max < min) fail("repetition {m,n} with n < m");
    }
    skip_space(nested);
    return ast_.repeat(item, min, max);
  }

  int32_t parse_count() {
    if (!(peek() >= '0' && peek() <= '9')) fail("expected a number");
    int64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > kMaxRepeat) fail("repetition counts are limited to " + std::to_string(kMaxRepeat));
      ++pos_;
    }
    return static_cast<int32_t>(v);
  }

  // One character of a literal or class: an escape or one UTF-8 encoded code point.
  uint32_t parse_char() {
    if (at_end()) fail("unexpected end of the grammar");
    if (peek() != '\\') {
      Utf8Reader r(text_.substr(pos_));
      const int32_t c = r.next();
      if (c < 0) fail("invalid UTF-8 in the grammar");
      pos_ += r.offset();
      return static_cast<uint32_t>(c);
    }
    const char e = peek(1);
    pos_ += 2;
    switch (e) {
      case 'x':
        return parse_hex(2);
      case 'u':
        return parse_hex(4);
      case 'U':
        return parse_hex(8);
      case 't':
        return '\t';
      case 'r':
        return '\r';
      case 'n':
        return '\n';
      case '\\':
      case '"':
      case '[':
      case ']':
        return static_cast<uint32_t>(e);
      case '\0':
        pos_ -= 1;
        fail("unexpected end of the grammar after '\\'");
      default:
        pos_ -= 2;
        fail(std::string("unknown escape '\\") + e + "'");
    }
  }

  uint32_t parse_hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const int h = hex_value(peek());
      if (h < 0) fail("expected " + std::to_string(digits) + " hexadecimal digits");
      v = (v << 4) | static_cast<uint32_t>(h);
      ++pos_;
    }
    if (v > kMaxCodepoint) fail("code point beyond U+10FFFF");
    return v;
  }

  ExprId parse_literal() {
    const size_t start = pos_;
    ++pos_;  // '"'
    std::string bytes;
    while (peek() != '"') {
      if (at_end()) fail_at(where(start), "unterminated string literal");
      const uint32_t c = parse_char();
      if (c >= 0xD800 && c <= 0xDFFF) fail("surrogate code points have no UTF-8 encoding");
      append_utf8(c, bytes);
    }
    ++pos_;
    return ast_.literal(std::move(bytes));
  }

  ExprId parse_class() {
    const size_t start = pos_;
    ++pos_;  // '['
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    CodepointSet set;
    while (peek() != ']') {
      if (at_end()) fail_at(where(start), "unterminated character class");
      const uint32_t lo = parse_char();
      uint32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
        ++pos_;
        hi = parse_char();
        if (hi < lo) fail("character range with its end before its start");
      }
      set.add(lo, hi);
    }
    ++pos_;
    return ast_.chars(negated ? set.complement() : std::move(set));
  }

  std::string_view text_;
  size_t pos_ = 0;
  GrammarAst ast_;
  std::vector<size_t> first_ref_;  // by rule
};

}  // namespace

GrammarAst parse_gbnf(std::string_view text) {
  return GbnfParser(text).parse();
}

}  // namespace strata::grammar
