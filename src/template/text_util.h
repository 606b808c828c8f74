// Python `str` semantics on UTF-8 strings, for the Jinja engine.
//
// Template values keep text as UTF-8 bytes, but Python counts, indexes and slices code
// points, and its case mapping, whitespace and repr() are Unicode-aware. These helpers give
// the engine those semantics. Invalid UTF-8 bytes decode to the lone surrogates U+DC80..U+DCFF
// (Python's "surrogateescape") and encode back to the same byte, so nothing is lost or crashes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::jinja {

// Decodes the code point starting at s[i] and advances i past it.
char32_t utf8_next(std::string_view s, size_t& i);
void utf8_append(std::string& out, char32_t cp);
bool is_ascii(std::string_view s);
// Number of code points.
size_t utf8_length(std::string_view s);
// Byte offset of every code point, plus s.size() as the last entry.
std::vector<size_t> utf8_offsets(std::string_view s);
std::u32string utf8_decode(std::string_view s);
std::string utf8_encode(std::u32string_view s);

// Substring search in linear time (Knuth-Morris-Pratt); std::string::find is O(n*m) in the
// worst case, which a hostile template could exploit with long repetitive strings.
// Byte offset of the first occurrence at or after `from`, or npos.
size_t find_bytes(std::string_view hay, std::string_view needle, size_t from = 0);
// Byte offset of the last occurrence, or npos.
size_t rfind_bytes(std::string_view hay, std::string_view needle);

// str.isspace() of one code point.
bool is_py_space(char32_t c);
// str.isprintable() of one code point (approximation of the Unicode tables: controls,
// separators other than ' ', format characters, surrogates and private use are unprintable).
bool is_py_printable(char32_t c);

// Unicode simple case mapping (the C library's, through the C.UTF-8 locale; ASCII only when
// that locale is missing). Python's full mappings (e.g. 'ß'.upper() == 'SS') are not applied.
char32_t to_upper(char32_t c);
char32_t to_lower(char32_t c);
bool is_upper(char32_t c);
bool is_lower(char32_t c);
bool is_alpha(char32_t c);
bool is_digit(char32_t c);
bool is_alnum(char32_t c);

std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_title(std::string_view s);       // str.title()
std::string py_capitalize(std::string_view s);  // str.capitalize()
std::string py_swapcase(std::string_view s);

// str.strip/lstrip/rstrip; chars == nullptr strips whitespace.
std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right);
// str.split / str.rsplit; sep == nullptr splits on runs of whitespace. maxsplit < 0: no limit.
// Throws strata::Error on an empty separator.
std::vector<std::string> py_split(std::string_view s, const std::string* sep, int64_t maxsplit);
std::vector<std::string> py_rsplit(std::string_view s, const std::string* sep, int64_t maxsplit);
// str.splitlines(keepends).
std::vector<std::string> py_splitlines(std::string_view s, bool keepends);
// Size in bytes of py_replace's result (without building it).
size_t py_replace_size(std::string_view s, std::string_view old_sub, std::string_view new_sub, int64_t count);
// str.replace; count < 0 replaces all. Throws strata::Error if the result would exceed max_bytes.
std::string py_replace(std::string_view s, std::string_view old_sub, std::string_view new_sub, int64_t count,
                       size_t max_bytes);
// str.find / str.rfind in code points (-1 when absent), searching s[start:end] (code points).
int64_t py_find(std::string_view s, std::string_view sub, int64_t start, int64_t end, bool reverse);
// str.count in code points range.
int64_t py_count(std::string_view s, std::string_view sub);

// repr(float) and repr(str).
std::string py_float_repr(double v);
std::string py_str_repr(std::string_view s);

// Appends a JSON string literal as Python's json.dumps writes it (ensure_ascii escapes
// everything above U+007F as \uXXXX, with surrogate pairs).
void json_quote(std::string& out, std::string_view s, bool ensure_ascii);

}  // namespace strata::jinja
