// Code point classification and UTF-8 helpers for the tokenizers.
//
// Classes follow the Unicode general categories (see unicode_tables.h); "whitespace" is the
// White_Space property, which is what \s means in the pre-tokenizer patterns llama.cpp and
// Hugging Face use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/unicode_tables.h"

namespace strata::unicode {

inline constexpr uint32_t kReplacementChar = 0xFFFD;
inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;

// Bit flags of one code point: exactly one class bit (kUnassigned for unassigned code points
// and values above U+10FFFF), plus kWhitespace.
enum CodepointFlag : uint16_t {
  kUnassigned = 1 << 0,
  kLetter = 1 << 1,
  kNumber = 1 << 2,
  kPunctuation = 1 << 3,
  kSymbol = 1 << 4,
  kMark = 1 << 5,
  kSeparator = 1 << 6,
  kOther = 1 << 7,
  kWhitespace = 1 << 8,
};

uint16_t codepoint_flags(uint32_t cp);
UnicodeClass codepoint_class(uint32_t cp);

inline bool is_letter(uint32_t cp) {
  return codepoint_flags(cp) & kLetter;
}
inline bool is_number(uint32_t cp) {
  return codepoint_flags(cp) & kNumber;
}
inline bool is_punctuation(uint32_t cp) {
  return codepoint_flags(cp) & kPunctuation;
}
inline bool is_whitespace(uint32_t cp) {
  return codepoint_flags(cp) & kWhitespace;
}

// Length of the UTF-8 sequence announced by a lead byte, as llama.cpp counts it: 1 for ASCII
// and for stray continuation bytes, 2/3/4 from the high bits of the lead byte.
inline size_t utf8_sequence_length(uint8_t lead) {
  static constexpr uint8_t kByHighNibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kByHighNibble[lead >> 4];
}

// Decodes one code point at `pos` and advances `pos`. Lenient like llama.cpp: the lead byte's
// length and continuation bytes are checked (not overlong forms or surrogates); on a malformed
// sequence it returns U+FFFD and advances by one byte.
uint32_t decode_utf8(std::string_view s, size_t& pos);

// All code points of `s`, decoded with decode_utf8.
std::vector<uint32_t> to_codepoints(std::string_view s);

// Appends the UTF-8 encoding of `cp` (values above U+10FFFF are encoded as U+FFFD).
void append_utf8(std::string& out, uint32_t cp);
std::string to_utf8(uint32_t cp);

// Strict UTF-8 (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF) at `pos`:
// kValid: a complete sequence of `length` bytes; kInvalid: the first `length` bytes (the maximal
// subpart of a sequence) can never become valid; kTruncated: the remaining `length` bytes are a
// valid prefix that more bytes could complete.
struct Utf8Scan {
  enum Kind { kValid, kInvalid, kTruncated } kind;
  size_t length;
};
Utf8Scan scan_utf8(std::string_view s, size_t pos);

// Replaces every ill-formed subsequence by U+FFFD, one per maximal subpart (the Unicode
// "best practice", as Python's bytes.decode(errors="replace")).
std::string sanitize_utf8(std::string_view s);

}  // namespace strata::unicode
