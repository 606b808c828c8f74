#include "template/lexer.h"

#include <cstdlib>

#include "template/template_error.h"
#include "template/text_util.h"

namespace strata::jinja {

namespace {

[[noreturn]] void syntax_error(int line, const std::string& msg) {
  throw TemplateError(TemplateError::Kind::Syntax, line, msg);
}

// "\r\n" and "\r" become "\n"; one trailing newline is dropped (keep_trailing_newline=False).
std::string normalize_source(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Python's rstrip() of whitespace.
std::string_view rstrip_space(std::string_view s) {
  const std::vector<size_t> offsets = utf8_offsets(s);
  size_t k = offsets.size() - 1;
  while (k > 0) {
    size_t pos = offsets[k - 1];
    if (!is_py_space(utf8_next(s, pos))) break;
    --k;
  }
  return s.substr(0, offsets[k]);
}

bool all_space(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size();)
    if (!is_py_space(utf8_next(s, i))) return false;
  return true;
}

bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9');
}
bool is_dec(char c) {
  return c >= '0' && c <= '9';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(normalize_source(source)) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      const size_t tag = find_tag_start(pos_);
      if (tag == std::string::npos) {
        emit_text(std::string_view(src_).substr(pos_), line_);
        break;
      }
      lex_tag(tag);
    }
    push(TokenKind::Eof, "", line_);
    return std::move(tokens_);
  }

 private:
  size_t find_tag_start(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  void push(TokenKind kind, std::string text, int line) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.line = line;
    tokens_.push_back(std::move(t));
  }

  void emit_text(std::string_view text, int line) {
    if (!text.empty()) push(TokenKind::Text, std::string(text), line);
  }

  int count_newlines(size_t from, size_t to) const {
    int n = 0;
    for (size_t i = from; i < to; ++i) n += src_[i] == '\n';
    return n;
  }

  // Text before a tag, with `-` (strip all whitespace) or lstrip_blocks applied.
  std::string_view strip_before_tag(std::string_view text, char sign, bool is_variable) const {
    if (sign == '-') return rstrip_space(text);
    if (sign == '+' || is_variable) return text;
    const size_t nl = text.rfind('\n');
    const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
    if ((l_pos > 0 || line_starting_) && all_space(text.substr(l_pos))) return text.substr(0, l_pos);
    return text;
  }

  // Matches `{%(-|+|)\s*raw\s*(-%}\s*|%})` at `tag`; returns the end of the match or npos.
  size_t match_raw_begin(size_t tag) const {
    size_t i = tag + 2;
    if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
    i = skip_space(i);
    if (src_.compare(i, 3, "raw") != 0) return std::string::npos;
    i = skip_space(i + 3);
    if (src_.compare(i, 3, "-%}") == 0) return skip_space(i + 3);
    if (src_.compare(i, 2, "%}") == 0) return i + 2;
    return std::string::npos;
  }

  size_t skip_space(size_t i) const {
    while (i < src_.size()) {
      size_t next = i;
      if (!is_py_space(utf8_next(src_, next))) break;
      i = next;
    }
    return i;
  }

  // End of a block-like tag (`%}` or `#}`) at i, with trim_blocks' newline: returns the end.
  size_t consume_block_end(size_t i, char close_char) const {
    // i points at '+', '-' or the first close char ('%' / '#').
    if (src_[i] == '+') return i + 3;
    if (src_[i] == '-') return skip_space(i + 3);
    size_t end = i + 2;
    if (end < src_.size() && src_[end] == '\n') ++end;
    (void)close_char;
    return end;
  }

  void lex_tag(size_t tag) {
    const char type = src_[tag + 1];
    size_t after = tag + 2;
    char sign = 0;
    if (after < src_.size() && (src_[after] == '-' || src_[after] == '+')) sign = src_[after++];
    const size_t raw_end = type == '%' ? match_raw_begin(tag) : std::string::npos;
    const std::string_view text = std::string_view(src_).substr(pos_, tag - pos_);
    emit_text(strip_before_tag(text, sign, type == '{'), line_);
    line_ += count_newlines(pos_, tag);
    if (raw_end != std::string::npos) {
      line_ += count_newlines(tag, raw_end);
      line_starting_ = raw_end > tag && src_[raw_end - 1] == '\n';
      lex_raw(raw_end);
    } else if (type == '#') {
      lex_comment(after);
    } else {
      lex_expression_tag(type == '%', after);
    }
  }

  void lex_comment(size_t body) {
    const size_t close = src_.find("#}", body);
    if (close == std::string::npos) syntax_error(line_, "Missing end of comment tag");
    size_t end;
    if (close > body && (src_[close - 1] == '-' || src_[close - 1] == '+'))
      end = consume_block_end(close - 1, '#');
    else
      end = consume_block_end(close, '#');
    line_ += count_newlines(body, end);
    line_starting_ = src_[end - 1] == '\n';
    pos_ = end;
  }

  // Matches `{%(-|+|)\s*endraw\s*(+%}|-%}\s*|%}\n?)` at i: returns the end, sets sign.
  size_t match_raw_end(size_t i, char& sign) const {
    size_t j = i + 2;
    sign = 0;
    if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) sign = src_[j++];
    j = skip_space(j);
    if (src_.compare(j, 6, "endraw") != 0) return std::string::npos;
    j = skip_space(j + 6);
    if (src_.compare(j, 3, "+%}") == 0 || src_.compare(j, 3, "-%}") == 0 || src_.compare(j, 2, "%}") == 0)
      return consume_block_end(j, '%');
    return std::string::npos;
  }

  void lex_raw(size_t body) {
    for (size_t i = src_.find("{%", body); i != std::string::npos; i = src_.find("{%", i + 1)) {
      char sign = 0;
      const size_t end = match_raw_end(i, sign);
      if (end == std::string::npos) continue;
      const std::string_view text = std::string_view(src_).substr(body, i - body);
      emit_text(strip_before_tag(text, sign, false), line_);
      line_ += count_newlines(body, end);
      line_starting_ = src_[end - 1] == '\n';
      pos_ = end;
      return;
    }
    syntax_error(line_, "Missing end of raw directive");
  }

  // Returns the end of the closing delimiter at i (with whitespace control), or npos.
  size_t match_tag_end(size_t i, bool block) const {
    if (block) {
      if (src_.compare(i, 3, "+%}") == 0 || src_.compare(i, 3, "-%}") == 0 || src_.compare(i, 2, "%}") == 0)
        return consume_block_end(i, '%');
      return std::string::npos;
    }
    if (src_.compare(i, 3, "-}}") == 0) return skip_space(i + 3);
    if (src_.compare(i, 2, "}}") == 0) return i + 2;
    return std::string::npos;
  }

  void lex_expression_tag(bool block, size_t i) {
    push(block ? TokenKind::BlockBegin : TokenKind::VarBegin, "", line_);
    std::string balance;  // expected closing brackets
    while (true) {
      if (i >= src_.size())
        syntax_error(line_, block ? "unexpected end of template, expected '%}'"
                                  : "unexpected end of template, expected '}}'");
      if (balance.empty()) {
        const size_t end = match_tag_end(i, block);
        if (end != std::string::npos) {
          push(block ? TokenKind::BlockEnd : TokenKind::VarEnd, "", line_);
          line_ += count_newlines(i, end);
          line_starting_ = src_[end - 1] == '\n';
          pos_ = end;
          return;
        }
      }
      size_t next = i;
      if (is_py_space(utf8_next(src_, next))) {
        line_ += count_newlines(i, next);
        i = next;
        continue;
      }
      i = lex_token(i, balance);
    }
  }

  // One token inside a tag at i; returns the position after it.
  size_t lex_token(size_t i, std::string& balance) {
    const char c = src_[i];
    if (is_dec(c)) return lex_number(i);
    if (is_name_start(c)) {
      size_t j = i;
      while (j < src_.size() && is_name_char(src_[j])) ++j;
      push(TokenKind::Name, src_.substr(i, j - i), line_);
      return j;
    }
    if (c == '\'' || c == '"') {
      const size_t end = lex_string(i);
      if (end != std::string::npos) return end;
    }
    return lex_operator(i, balance);
  }

  size_t lex_operator(size_t i, std::string& balance) {
    static const char* const kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : kTwo) {
      if (src_.compare(i, 2, op) == 0) {
        push(TokenKind::Op, op, line_);
        return i + 2;
      }
    }
    const char c = src_[i];
    if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
      size_t j = i;
      const char32_t cp = utf8_next(src_, j);
      std::string shown;
      utf8_append(shown, cp);
      syntax_error(line_, "unexpected char " + py_str_repr(shown) + " at " + std::to_string(i));
    }
    if (c == '(' || c == '[' || c == '{') {
      balance.push_back(c == '(' ? ')' : (c == '[' ? ']' : '}'));
    } else if (c == ')' || c == ']' || c == '}') {
      if (balance.empty()) syntax_error(line_, std::string("unexpected '") + c + "'");
      if (balance.back() != c)
        syntax_error(line_, std::string("unexpected '") + c + "', expected '" + balance.back() + "'");
      balance.pop_back();
    }
    push(TokenKind::Op, std::string(1, c), line_);
    return i + 1;
  }

  // Digits with optional single underscores between them; returns the end (i if none).
  size_t scan_digits(size_t i, int (*digit)(char)) const {
    size_t j = i;
    while (j < src_.size()) {
      if (digit(src_[j]) >= 0) {
        ++j;
      } else if (src_[j] == '_' && j > i && j + 1 < src_.size() && digit(src_[j + 1]) >= 0) {
        ++j;
      } else {
        break;
      }
    }
    return j;
  }

  static int dec_digit(char c) { return is_dec(c) ? c - '0' : -1; }
  static int hex_digit(char c) { return hex_value(c); }
  static int oct_digit(char c) { return c >= '0' && c <= '7' ? c - '0' : -1; }
  static int bin_digit(char c) { return c == '0' || c == '1' ? c - '0' : -1; }

  size_t lex_number(size_t i) {
    if (size_t end = lex_float(i); end != std::string::npos) return end;
    if (src_[i] == '0' && i + 1 < src_.size()) {
      const char p = static_cast<char>(src_[i + 1] | 0x20);
      int (*digit)(char) = p == 'x' ? hex_digit : (p == 'o' ? oct_digit : (p == 'b' ? bin_digit : nullptr));
      const int base = p == 'x' ? 16 : (p == 'o' ? 8 : 2);
      size_t start = i + 2;
      if (digit && start < src_.size() && src_[start] == '_') ++start;
      if (digit && start < src_.size() && digit(src_[start]) >= 0) {
        const size_t end = scan_digits(start, digit);
        push_integer(src_.substr(start, end - start), base);
        return end;
      }
      // "0", "0_0", ...: decimal zero.
      size_t end = i + 1;
      while (end + 1 < src_.size() && src_[end] == '_' && src_[end + 1] == '0') end += 2;
      while (end < src_.size() && src_[end] == '0') ++end;
      push_integer("0", 10);
      return end;
    }
    const size_t end = scan_digits(i, dec_digit);
    push_integer(src_.substr(i, end - i), 10);
    return end;
  }

  void push_integer(std::string digits, int base) {
    std::string clean;
    for (char c : digits)
      if (c != '_') clean.push_back(c);
    errno = 0;
    char* endp = nullptr;
    const long long v = std::strtoll(clean.c_str(), &endp, base);
    if (errno == ERANGE) syntax_error(line_, "integer literal " + clean + " is too large");
    Token t;
    t.kind = TokenKind::Integer;
    t.int_value = v;
    t.line = line_;
    tokens_.push_back(std::move(t));
  }

  // Float literal: digits with a fractional part and/or an exponent; npos when not a float.
  size_t lex_float(size_t i) {
    if (i > 0 && src_[i - 1] == '.') return std::string::npos;
    size_t j = scan_digits(i, dec_digit);
    bool is_float = false;
    if (j + 1 < src_.size() && src_[j] == '.' && is_dec(src_[j + 1])) {
      j = scan_digits(j + 1, dec_digit);
      is_float = true;
    }
    if (j < src_.size() && (src_[j] == 'e' || src_[j] == 'E')) {
      size_t k = j + 1;
      if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
      if (k < src_.size() && is_dec(src_[k])) {
        j = scan_digits(k, dec_digit);
        is_float = true;
      }
    }
    if (!is_float) return std::string::npos;
    std::string clean;
    for (size_t k = i; k < j; ++k)
      if (src_[k] != '_') clean.push_back(src_[k]);
    Token t;
    t.kind = TokenKind::Float;
    t.float_value = std::strtod(clean.c_str(), nullptr);
    t.line = line_;
    tokens_.push_back(std::move(t));
    return j;
  }

  // Quoted string with Python escapes; npos when unterminated (the caller reports it).
  size_t lex_string(size_t i) {
    const char quote = src_[i];
    size_t j = i + 1;
    while (j < src_.size() && src_[j] != quote) j += src_[j] == '\\' ? 2 : 1;
    if (j >= src_.size()) return std::string::npos;
    const int line = line_;
    std::string value = unescape(std::string_view(src_).substr(i + 1, j - i - 1));
    line_ += count_newlines(i, j);
    push(TokenKind::String, std::move(value), line);
    return j + 1;
  }

  // Python's "unicode-escape" decoding of a literal's body.
  std::string unescape(std::string_view s) const {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\\' || i + 1 >= s.size()) {
        out.push_back(s[i]);
        continue;
      }
      const char e = s[++i];
      switch (e) {
        case '\n':
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '\'':
          out.push_back('\'');
          break;
        case '"':
          out.push_back('"');
          break;
        case 'a':
          out.push_back('\a');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'v':
          out.push_back('\v');
          break;
        case 'x':
          i = unescape_hex(s, i, 2, out);
          break;
        case 'u':
          i = unescape_hex(s, i, 4, out);
          break;
        case 'U':
          i = unescape_hex(s, i, 8, out);
          break;
        default:
          if (e >= '0' && e <= '7') {
            char32_t v = 0;
            size_t k = i;
            for (; k < s.size() && k < i + 3 && s[k] >= '0' && s[k] <= '7'; ++k) v = v * 8 + (s[k] - '0');
            utf8_append(out, v);
            i = k - 1;
          } else {
            out.push_back('\\');
            out.push_back(e);
          }
      }
    }
    return out;
  }

  // \xHH, \uHHHH, \UHHHHHHHH with s[i] the letter; returns the index of the last digit.
  size_t unescape_hex(std::string_view s, size_t i, int n, std::string& out) const {
    char32_t v = 0;
    for (int k = 1; k <= n; ++k) {
      const int d = i + k < s.size() ? hex_value(s[i + k]) : -1;
      if (d < 0) syntax_error(line_, "truncated \\" + std::string(1, s[i]) + " escape in string literal");
      v = v * 16 + static_cast<char32_t>(d);
    }
    size_t last = i + n;
    // Join a UTF-16 surrogate pair written as two \u escapes.
    if (v >= 0xD800 && v <= 0xDBFF && last + 6 < s.size() && s[last + 1] == '\\' && s[last + 2] == 'u') {
      char32_t lo = 0;
      bool ok = true;
      for (int k = 3; k <= 6; ++k) {
        const int d = hex_value(s[last + k]);
        if (d < 0) ok = false;
        lo = lo * 16 + static_cast<char32_t>(d < 0 ? 0 : d);
      }
      if (ok && lo >= 0xDC00 && lo <= 0xDFFF) {
        v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
        last += 6;
      }
    }
    if (v > 0x10FFFF) syntax_error(line_, "illegal Unicode character in string literal");
    if (v >= 0xD800 && v <= 0xDFFF) v = 0xFFFD;
    utf8_append(out, v);
    return last;
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
  return Lexer(source).run();
}

}  // namespace strata::jinja
