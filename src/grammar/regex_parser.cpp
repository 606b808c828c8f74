#include "grammar/regex_parser.h"

#include "grammar/limits.h"
#include "grammar/utf8_reader.h"

namespace strata::grammar {
namespace {

CodepointSet digit_set() {
  return CodepointSet('0', '9');
}
CodepointSet word_set() {
  CodepointSet s('a', 'z');
  s.add('A', 'Z');
  s.add('0', '9');
  s.add('_');
  return s;
}
CodepointSet space_set() {
  CodepointSet s('\t', '\r');  // \t \n \v \f \r
  s.add(' ');
  return s;
}
// The ASCII characters Python's \s matches: also the separators U+001C..U+001F. A negation
// (\S, [^\s]) leaves out all of them.
CodepointSet python_space_set() {
  CodepointSet s = space_set();
  s.add(0x1C, 0x1F);
  return s;
}
CodepointSet ascii_complement(const CodepointSet& s) {
  return s.complement().intersect(CodepointSet(0, 0x7F));
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class RegexParser {
 public:
  RegexParser(std::string_view pattern, GrammarAst& ast, bool json_escape)
      : p_(pattern), ast_(ast), json_(json_escape) {}

  ExprId parse() {
    if (p_.size() > kMaxRegexBytes) fail("is longer than " + std::to_string(kMaxRegexBytes) + " bytes");
    const ExprId e = parse_alternation(0);
    if (pos_ < p_.size()) fail(p_[pos_] == ')' ? "has an unbalanced ')'" : "could not be parsed");
    return e;
  }

 private:
  bool at_end() const { return pos_ >= p_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < p_.size() ? p_[pos_ + ahead] : '\0'; }
  [[noreturn]] void fail(const std::string& msg) const {
    STRATA_GRAMMAR_THROW("regex ", msg, " (at offset ", pos_, ")");
  }

  ExprId parse_alternation(int depth) {
    std::vector<ExprId> alts{parse_concat(depth)};
    while (peek() == '|') {
      ++pos_;
      alts.push_back(parse_concat(depth));
    }
    return ast_.alt(std::move(alts));
  }

  ExprId parse_concat(int depth) {
    std::vector<ExprId> items;
    while (!at_end() && peek() != '|' && peek() != ')') {
      const char c = peek();
      if (c == '^') {
        // An anchor is the start of the whole match: only first in a top-level alternative.
        if (depth > 0 || !items.empty()) fail("anchor '^' inside the pattern is not supported");
        ++pos_;
        continue;
      }
      if (c == '$') {
        ++pos_;
        if (depth > 0 || !(at_end() || peek() == '|')) fail("anchor '$' inside the pattern is not supported");
        continue;
      }
      ExprId atom = parse_atom(depth);
      items.push_back(parse_quantifiers(atom));
    }
    return ast_.seq(std::move(items));
  }

  ExprId parse_quantifiers(ExprId atom) {
    bool repeated = false;
    for (;;) {
      int32_t min, max;
      const size_t start = pos_;
      if (!parse_quantifier(min, max)) return atom;
      if (repeated) {
        pos_ = start;
        fail("has a multiple repeat");
      }
      repeated = true;
      if (peek() == '?')
        ++pos_;  // lazy: the same strings
      else if (peek() == '+')
        fail("possessive quantifiers are not supported");
      atom = ast_.repeat(atom, min, max);
    }
  }

  // * + ? {m} {m,} {m,n} {,n}; a '{' that does not start a quantifier is a literal (Python).
  bool parse_quantifier(int32_t& min, int32_t& max) {
    const char c = peek();
    if (c == '*' || c == '+' || c == '?') {
      ++pos_;
      min = c == '+' ? 1 : 0;
      max = c == '?' ? 1 : kUnbounded;
      return true;
    }
    if (c != '{') return false;
    size_t i = pos_ + 1;
    auto number = [&](int64_t& v) {
      const size_t start = i;
      v = 0;
      while (i < p_.size() && p_[i] >= '0' && p_[i] <= '9') {
        v = std::min<int64_t>(v * 10 + (p_[i] - '0'), int64_t{1} << 40);
        ++i;
      }
      return i > start;
    };
    int64_t lo = 0, hi = 0;
    const bool has_lo = number(lo);
    bool has_comma = false, has_hi = false;
    if (i < p_.size() && p_[i] == ',') {
      has_comma = true;
      ++i;
      has_hi = number(hi);
    }
    if (i >= p_.size() || p_[i] != '}' || (!has_lo && !has_hi)) return false;
    pos_ = i + 1;
    if (!has_comma) hi = lo;
    if (lo > kMaxRepeat || (has_hi && hi > kMaxRepeat))
      fail("repetition counts are limited to " + std::to_string(kMaxRepeat));
    if (has_hi && hi < lo) fail("has a repetition {m,n} with n < m");
    min = static_cast<int32_t>(lo);
    max = (has_comma && !has_hi) ? kUnbounded : static_cast<int32_t>(hi);
    return true;
  }

  ExprId chars(CodepointSet set) { return ast_.chars(std::move(set), json_); }

  ExprId parse_atom(int depth) {
    const char c = peek();
    if (c == '(') return parse_group(depth);
    if (c == '[') return chars(parse_class());
    if (c == '.') {
      ++pos_;
      CodepointSet s = CodepointSet::any();
      return chars(s.intersect(CodepointSet('\n').complement()));
    }
    if (c == '*' || c == '+' || c == '?') fail("has nothing to repeat");
    if (c == '{') {
      int32_t a, b;
      const size_t start = pos_;
      if (parse_quantifier(a, b)) {
        pos_ = start;
        fail("has nothing to repeat");
      }
    }
    if (c == '\\') return chars(parse_escape(false));
    return chars(CodepointSet(read_codepoint()));
  }

  ExprId parse_group(int depth) {
    if (depth >= kMaxNesting) fail("nests groups deeper than " + std::to_string(kMaxNesting));
    ++pos_;
    if (peek() == '?') {
      const char k = peek(1);
      if (k == ':') {
        pos_ += 2;
      } else if (k == 'P' && peek(2) == '<') {
        skip_group_name(3, '>');
      } else if (k == '<' && peek(2) != '=' && peek(2) != '!') {
        skip_group_name(2, '>');
      } else if (k == '=' || k == '!' || (k == '<' && (peek(2) == '=' || peek(2) == '!'))) {
        fail("lookaround assertions are not supported");
      } else if (k == 'P' && peek(2) == '=') {
        fail("backreferences are not supported");
      } else {
        fail("inline flags and other (?...) groups are not supported");
      }
    }
    const ExprId e = parse_alternation(depth + 1);
    if (peek() != ')') fail("is missing a ')'");
    ++pos_;
    return e;
  }

  void skip_group_name(size_t prefix, char close) {
    pos_ += prefix;
    while (!at_end() && peek() != close) ++pos_;
    if (at_end()) fail("has an unterminated group name");
    ++pos_;
  }

  uint32_t read_codepoint() {
    Utf8Reader r(p_.substr(pos_));
    const int32_t c = r.next();
    if (c < 0) fail("is not valid UTF-8");
    pos_ += r.offset();
    return static_cast<uint32_t>(c);
  }

  uint32_t parse_hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const int h = hex_value(peek());
      if (h < 0) fail("has an escape that needs " + std::to_string(digits) + " hexadecimal digits");
      v = (v << 4) | static_cast<uint32_t>(h);
      ++pos_;
    }
    if (v > kMaxCodepoint) fail("has a code point beyond U+10FFFF");
    return v;
  }

  // After '\': a class (\d ...) or one character. in_class: inside [...] (\b is backspace).
  CodepointSet parse_escape(bool in_class) {
    ++pos_;
    if (at_end()) fail("ends with a '\\'");
    const char e = peek();
    ++pos_;
    switch (e) {
      case 'd':
        return digit_set();
      case 'D':
        return ascii_complement(digit_set());
      case 'w':
        return word_set();
      case 'W':
        return ascii_complement(word_set());
      case 's':
        return space_set();
      case 'S':
        return ascii_complement(python_space_set());
      case 'n':
        return CodepointSet('\n');
      case 't':
        return CodepointSet('\t');
      case 'r':
        return CodepointSet('\r');
      case 'f':
        return CodepointSet('\f');
      case 'v':
        return CodepointSet('\v');
      case '0':
        return CodepointSet(0);
      case 'a':
        return CodepointSet(7);
      case 'x':
        return CodepointSet(parse_hex(2));
      case 'u':
        return CodepointSet(parse_hex(4));
      case 'U':
        return CodepointSet(parse_hex(8));
      case 'b':
        if (in_class) return CodepointSet(8);
        fail("word boundaries (\\b) are not supported");
      case 'B':
        fail("word boundaries (\\B) are not supported");
      case 'A':
      case 'Z':
      case 'z':
        fail(std::string("anchor '\\") + e + "' is not supported");
      case 'p':
      case 'P':
        fail("Unicode property classes (\\p{...}) are not supported");
      default:
        break;
    }
    if ((e >= '1' && e <= '9') || e == 'k' || e == 'g') fail("backreferences are not supported");
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z'))
      fail(std::string("has an unknown escape '\\") + e + "'");
    --pos_;
    return CodepointSet(read_codepoint());  // an escaped punctuation or other character
  }

  CodepointSet parse_class() {
    ++pos_;  // '['
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    CodepointSet set;
    CodepointSet negatable;       // what a negation removes: like `set`, with Python's wider \s
    bool has_wide_class = false;  // \D \W \S, or \d \w \s under negation: kept within ASCII
    bool first = true;
    for (;;) {
      if (at_end()) fail("has an unterminated character class");
      if (peek() == ']' && !first) break;
      first = false;
      CodepointSet lo_set;
      const bool escape = peek() == '\\';
      if (escape) {
        const char k = peek(1);
        has_wide_class =
            has_wide_class || k == 'd' || k == 'w' || k == 's' || k == 'D' || k == 'W' || k == 'S';
        lo_set = parse_escape(true);
        if (k == 's') negatable.add(python_space_set());
      } else {
        lo_set = CodepointSet(read_codepoint());
      }
      const bool single = lo_set.ranges().size() == 1 && lo_set.ranges()[0].lo == lo_set.ranges()[0].hi;
      if (single && peek() == '-' && peek(1) != ']' && pos_ + 1 < p_.size()) {
        ++pos_;
        CodepointSet hi_set = peek() == '\\' ? parse_escape(true) : CodepointSet(read_codepoint());
        if (hi_set.ranges().size() != 1 || hi_set.ranges()[0].lo != hi_set.ranges()[0].hi)
          fail("has a character range with a class as its end");
        const uint32_t lo = lo_set.ranges()[0].lo, hi = hi_set.ranges()[0].lo;
        if (hi < lo) fail("has a character range with its end before its start");
        set.add(lo, hi);
        negatable.add(lo, hi);
      } else {
        set.add(lo_set);
        negatable.add(lo_set);
      }
    }
    ++pos_;  // ']'
    if (!negated) return set;
    return has_wide_class ? ascii_complement(negatable) : negatable.complement();
  }

  std::string_view p_;
  size_t pos_ = 0;
  GrammarAst& ast_;
  bool json_;
};

}  // namespace

ExprId parse_regex(std::string_view pattern, GrammarAst& ast, bool json_escape) {
  return RegexParser(pattern, ast, json_escape).parse();
}

GrammarAst regex_grammar(std::string_view pattern) {
  GrammarAst ast;
  const ExprId body = parse_regex(pattern, ast);
  ast.root = ast.add_rule("root", body);
  return ast;
}

}  // namespace strata::grammar
