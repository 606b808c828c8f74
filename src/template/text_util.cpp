#include "template/text_util.h"

#include <locale.h>
#include <string.h>
#include <wctype.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "core/check.h"

namespace strata::jinja {

namespace {

// Bytes that do not start a valid sequence decode to U+DC80 + byte (surrogateescape).
constexpr char32_t kEscapeBase = 0xDC00;

char32_t escape_byte(unsigned char b) {
  return kEscapeBase + b;
}

}  // namespace

char32_t utf8_next(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  int len = 0;
  char32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF)
    len = 2, cp = b0 & 0x1F;
  else if (b0 >= 0xE0 && b0 <= 0xEF)
    len = 3, cp = b0 & 0x0F;
  else if (b0 >= 0xF0 && b0 <= 0xF4)
    len = 4, cp = b0 & 0x07;
  if (len == 0 || i + len > s.size()) {
    ++i;
    return escape_byte(b0);
  }
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) {
      ++i;
      return escape_byte(b0);
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  // Reject overlong forms, surrogates and values above U+10FFFF.
  const bool bad = (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
                   (len == 4 && (cp < 0x10000 || cp > 0x10FFFF));
  if (bad) {
    ++i;
    return escape_byte(b0);
  }
  i += len;
  return cp;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp >= kEscapeBase + 0x80 && cp <= kEscapeBase + 0xFF) {
    out.push_back(static_cast<char>(cp - kEscapeBase));
  } else if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool is_ascii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

size_t utf8_length(std::string_view s) {
  if (is_ascii(s)) return s.size();
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) utf8_next(s, i);
  return n;
}

std::vector<size_t> utf8_offsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size();) {
    offsets.push_back(i);
    utf8_next(s, i);
  }
  offsets.push_back(s.size());
  return offsets;
}

std::u32string utf8_decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) out.push_back(utf8_next(s, i));
  return out;
}

std::string utf8_encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) utf8_append(out, c);
  return out;
}

size_t find_bytes(std::string_view hay, std::string_view needle, size_t from) {
  constexpr size_t npos = std::string_view::npos;
  const size_t m = needle.size();
  if (from > hay.size()) return npos;
  if (m == 0) return from;
  if (hay.size() - from < m) return npos;
  // Knuth-Morris-Pratt (linear whatever the input), jumping with memchr while nothing matches.
  std::vector<size_t> fail(m, 0);
  for (size_t i = 1, k = 0; i < m; ++i) {
    while (k > 0 && needle[i] != needle[k]) k = fail[k - 1];
    if (needle[i] == needle[k]) ++k;
    fail[i] = k;
  }
  for (size_t i = from, k = 0; i < hay.size(); ++i) {
    if (k == 0) {
      const void* p = memchr(hay.data() + i, needle[0], hay.size() - i);
      if (!p) return npos;
      i = static_cast<size_t>(static_cast<const char*>(p) - hay.data());
    }
    while (k > 0 && hay[i] != needle[k]) k = fail[k - 1];
    if (hay[i] == needle[k]) ++k;
    if (k == m) return i + 1 - m;
  }
  return npos;
}

size_t rfind_bytes(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return std::string_view::npos;
  if (needle.empty()) return hay.size();
  // The last match is the first match of the reversed needle in the reversed haystack.
  const std::string rh(hay.rbegin(), hay.rend()), rn(needle.rbegin(), needle.rend());
  const size_t pos = find_bytes(rh, rn);
  return pos == std::string_view::npos ? pos : hay.size() - pos - needle.size();
}

bool is_py_space(char32_t c) {
  if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  if (c < 0x85) return false;
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_py_printable(char32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0xA0)) return false;
  if (c < 0xAD) return true;
  if (c == 0xAD) return false;
  if (c >= 0x600 && c <= 0x605) return false;
  if (c == 0x61C || c == 0x6DD || c == 0x70F || c == 0x8E2 || c == 0x180E || c == 0x1680) return false;
  if (c >= 0x2000 && c <= 0x200F) return false;
  if (c >= 0x2028 && c <= 0x202F) return false;
  if (c >= 0x205F && c <= 0x206F) return false;
  if (c == 0x3000 || c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFB) || c == 0xFFFE || c == 0xFFFF) return false;
  if (c >= 0xD800 && c <= 0xF8FF) return false;  // surrogates and private use
  if (c >= 0xE0000) return false;                // tags, variation selectors supplement, private use
  return true;
}

namespace {

locale_t utf8_locale() {
  static const locale_t loc = [] {
    locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(0));
    if (!l) l = newlocale(LC_CTYPE_MASK, "C.utf8", static_cast<locale_t>(0));
    return l;
  }();
  return loc;
}

bool is_escaped_byte(char32_t c) {
  return c >= kEscapeBase + 0x80 && c <= kEscapeBase + 0xFF;
}

}  // namespace

char32_t to_upper(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  if (is_escaped_byte(c) || !utf8_locale()) return c;
  return static_cast<char32_t>(towupper_l(static_cast<wint_t>(c), utf8_locale()));
}

char32_t to_lower(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  if (is_escaped_byte(c) || !utf8_locale()) return c;
  return static_cast<char32_t>(towlower_l(static_cast<wint_t>(c), utf8_locale()));
}

bool is_upper(char32_t c) {
  if (c < 0x80) return c >= 'A' && c <= 'Z';
  if (is_escaped_byte(c) || !utf8_locale()) return false;
  return iswupper_l(static_cast<wint_t>(c), utf8_locale());
}

bool is_lower(char32_t c) {
  if (c < 0x80) return c >= 'a' && c <= 'z';
  if (is_escaped_byte(c) || !utf8_locale()) return false;
  return iswlower_l(static_cast<wint_t>(c), utf8_locale());
}

bool is_alpha(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (is_escaped_byte(c) || !utf8_locale()) return false;
  return iswalpha_l(static_cast<wint_t>(c), utf8_locale());
}

bool is_digit(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return false;
}

bool is_alnum(char32_t c) {
  return is_alpha(c) || is_digit(c);
}

namespace {

template <typename F>
std::string map_code_points(std::string_view s, F f) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) utf8_append(out, f(utf8_next(s, i)));
  return out;
}

bool is_cased(char32_t c) {
  return is_upper(c) || is_lower(c);
}

}  // namespace

std::string py_upper(std::string_view s) {
  return map_code_points(s, to_upper);
}
std::string py_lower(std::string_view s) {
  return map_code_points(s, to_lower);
}
std::string py_swapcase(std::string_view s) {
  return map_code_points(s, [](char32_t c) { return is_upper(c) ? to_lower(c) : to_upper(c); });
}

std::string py_title(std::string_view s) {
  bool previous_cased = false;
  return map_code_points(s, [&](char32_t c) {
    const char32_t mapped = previous_cased ? to_lower(c) : to_upper(c);
    previous_cased = is_cased(c);
    return mapped;
  });
}

std::string py_capitalize(std::string_view s) {
  bool first = true;
  return map_code_points(s, [&](char32_t c) {
    const char32_t mapped = first ? to_upper(c) : to_lower(c);
    first = false;
    return mapped;
  });
}

std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::u32string set;
  if (chars) set = utf8_decode(*chars);
  auto strip_it = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_py_space(c); };
  size_t begin = 0, end = s.size();
  if (left) {
    while (begin < end) {
      size_t next = begin;
      if (!strip_it(utf8_next(s, next))) break;
      begin = next;
    }
  }
  if (right && begin < end) {
    const std::vector<size_t> offsets = utf8_offsets(s.substr(begin, end - begin));
    size_t k = offsets.size() - 1;  // index of the end offset
    while (k > 0) {
      size_t pos = offsets[k - 1];
      const std::string_view rest = s.substr(begin);
      if (!strip_it(utf8_next(rest, pos))) break;
      --k;
    }
    end = begin + offsets[k];
  }
  return std::string(s.substr(begin, end - begin));
}

namespace {

// Whitespace-run split from the left (Python's split() without separator).
std::vector<std::string> split_whitespace(std::string_view s, int64_t maxsplit) {
  std::vector<std::string> parts;
  const std::u32string cps = utf8_decode(s);
  size_t i = 0, n = cps.size();
  while (maxsplit != 0) {
    while (i < n && is_py_space(cps[i])) ++i;
    if (i == n) break;
    size_t j = i;
    while (i < n && !is_py_space(cps[i])) ++i;
    parts.push_back(utf8_encode(std::u32string_view(cps).substr(j, i - j)));
    if (maxsplit > 0) --maxsplit;
  }
  if (i < n) {
    while (i < n && is_py_space(cps[i])) ++i;
    if (i < n) parts.push_back(utf8_encode(std::u32string_view(cps).substr(i)));
  }
  return parts;
}

std::vector<std::string> rsplit_whitespace(std::string_view s, int64_t maxsplit) {
  std::vector<std::string> parts;
  const std::u32string cps = utf8_decode(s);
  size_t i = cps.size();
  while (maxsplit != 0) {
    while (i > 0 && is_py_space(cps[i - 1])) --i;
    if (i == 0) break;
    size_t j = i;
    while (i > 0 && !is_py_space(cps[i - 1])) --i;
    parts.push_back(utf8_encode(std::u32string_view(cps).substr(i, j - i)));
    if (maxsplit > 0) --maxsplit;
  }
  if (i > 0) {
    while (i > 0 && is_py_space(cps[i - 1])) --i;
    if (i > 0) parts.push_back(utf8_encode(std::u32string_view(cps).substr(0, i)));
  }
  return {parts.rbegin(), parts.rend()};
}

}  // namespace

std::vector<std::string> py_split(std::string_view s, const std::string* sep, int64_t maxsplit) {
  if (!sep) return split_whitespace(s, maxsplit);
  if (sep->empty()) STRATA_THROW("empty separator");
  std::vector<std::string> parts;
  size_t start = 0;
  while (maxsplit != 0) {
    const size_t pos = find_bytes(s, *sep, start);
    if (pos == std::string_view::npos) break;
    parts.emplace_back(s.substr(start, pos - start));
    start = pos + sep->size();
    if (maxsplit > 0) --maxsplit;
  }
  parts.emplace_back(s.substr(start));
  return parts;
}

std::vector<std::string> py_rsplit(std::string_view s, const std::string* sep, int64_t maxsplit) {
  if (!sep) return rsplit_whitespace(s, maxsplit);
  if (sep->empty()) STRATA_THROW("empty separator");
  // Matching from the right is matching the reversed strings from the left (byte-wise, so
  // multi-byte characters still match exactly).
  const std::string rs(s.rbegin(), s.rend()), rsep(sep->rbegin(), sep->rend());
  std::vector<std::string> parts = py_split(rs, &rsep, maxsplit);
  for (std::string& p : parts) std::reverse(p.begin(), p.end());
  std::reverse(parts.begin(), parts.end());
  return parts;
}

std::vector<std::string> py_splitlines(std::string_view s, bool keepends) {
  std::vector<std::string> lines;
  const std::u32string cps = utf8_decode(s);
  size_t start = 0, i = 0;
  auto is_break = [](char32_t c) {
    return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E) || c == 0x85 ||
           c == 0x2028 || c == 0x2029;
  };
  while (i < cps.size()) {
    if (!is_break(cps[i])) {
      ++i;
      continue;
    }
    size_t eol = i + 1;
    if (cps[i] == '\r' && eol < cps.size() && cps[eol] == '\n') ++eol;
    const size_t stop = keepends ? eol : i;
    lines.push_back(utf8_encode(std::u32string_view(cps).substr(start, stop - start)));
    start = i = eol;
  }
  if (start < cps.size()) lines.push_back(utf8_encode(std::u32string_view(cps).substr(start)));
  return lines;
}

size_t py_replace_size(std::string_view s, std::string_view old_sub, std::string_view new_sub,
                       int64_t count) {
  // Occurrences replaced: non-overlapping matches, or every code point boundary for "".
  auto n = static_cast<uint64_t>(py_count(s, old_sub));
  if (count >= 0 && static_cast<uint64_t>(count) < n) n = static_cast<uint64_t>(count);
  return s.size() - n * old_sub.size() + n * new_sub.size();
}

std::string py_replace(std::string_view s, std::string_view old_sub, std::string_view new_sub, int64_t count,
                       size_t max_bytes) {
  std::string out;
  auto append = [&](std::string_view piece) {
    if (out.size() + piece.size() > max_bytes) STRATA_THROW("string result exceeds ", max_bytes, " bytes");
    out.append(piece);
  };
  if (old_sub.empty()) {
    // Python inserts the replacement before every code point and at the end.
    size_t i = 0;
    while (i < s.size() && count != 0) {
      append(new_sub);
      const size_t start = i;
      utf8_next(s, i);
      append(s.substr(start, i - start));
      if (count > 0) --count;
    }
    if (i < s.size())
      append(s.substr(i));
    else if (count != 0)
      append(new_sub);
    return out;
  }
  size_t start = 0;
  while (count != 0) {
    const size_t pos = find_bytes(s, old_sub, start);
    if (pos == std::string_view::npos) break;
    append(s.substr(start, pos - start));
    append(new_sub);
    start = pos + old_sub.size();
    if (count > 0) --count;
  }
  append(s.substr(start));
  return out;
}

int64_t py_find(std::string_view s, std::string_view sub, int64_t start, int64_t end, bool reverse) {
  const std::vector<size_t> offsets = utf8_offsets(s);
  const auto n = static_cast<int64_t>(offsets.size() - 1);
  auto clamp = [n](int64_t v) {
    if (v < 0) v += n;
    return v < 0 ? int64_t{0} : (v > n ? n : v);
  };
  start = clamp(start);
  end = clamp(end);
  if (end < start) return -1;
  const std::string_view window = s.substr(offsets[start], offsets[end] - offsets[start]);
  const size_t pos = reverse ? rfind_bytes(window, sub) : find_bytes(window, sub);
  if (pos == std::string_view::npos) return -1;
  const size_t byte = offsets[start] + pos;
  // Convert the byte position back to a code point index.
  int64_t lo = start, hi = end;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (offsets[mid] < byte)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

int64_t py_count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(utf8_length(s)) + 1;
  int64_t n = 0;
  for (size_t pos = find_bytes(s, sub); pos != std::string_view::npos;
       pos = find_bytes(s, sub, pos + sub.size()))
    ++n;
  return n;
}

std::string py_float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  // Shortest round-trip digits in scientific form: "-d.ddde+XX".
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  STRATA_CHECK(res.ec == std::errc(), "to_chars failed");
  const std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));
  const size_t e_pos = sci.find('e');
  std::string_view mantissa = sci.substr(0, e_pos);
  int exponent = 0;
  std::from_chars(sci.data() + e_pos + 1 + (sci[e_pos + 1] == '+'), sci.data() + sci.size(), exponent);
  std::string out;
  if (!mantissa.empty() && mantissa[0] == '-') {
    out.push_back('-');
    mantissa.remove_prefix(1);
  }
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits.push_back(c);
  const int decpt = exponent + 1;  // position of the decimal point within the digits
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-decpt), '0');
      out += digits;
    } else if (static_cast<size_t>(decpt) >= digits.size()) {
      out += digits;
      out.append(static_cast<size_t>(decpt) - digits.size(), '0');
      out += ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt));
      out.push_back('.');
      out += digits.substr(static_cast<size_t>(decpt));
    }
    return out;
  }
  out.push_back(digits[0]);
  if (digits.size() > 1) {
    out.push_back('.');
    out += digits.substr(1);
  }
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  out += exp_buf;
  return out;
}

std::string py_str_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (size_t i = 0; i < s.size();) {
    const char32_t c = utf8_next(s, i);
    char buf[16];
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (is_py_printable(c) && !is_escaped_byte(c)) {
      utf8_append(out, c);
    } else {
      if (c < 0x100)
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      else if (c < 0x10000)
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      else
        std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
      out += buf;
    }
  }
  out.push_back(quote);
  return out;
}

void json_quote(std::string& out, std::string_view s, bool ensure_ascii) {
  out.push_back('"');
  char buf[16];
  for (size_t i = 0; i < s.size();) {
    const size_t start = i;
    const char32_t c = utf8_next(s, i);
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (c < 0x20 || (ensure_ascii && c >= 0x7F)) {
      if (c >= 0x10000) {
        const char32_t v = c - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                      static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      }
      out += buf;
    } else {
      out.append(s.substr(start, i - start));
    }
  }
  out.push_back('"');
}

}  // namespace strata::jinja
