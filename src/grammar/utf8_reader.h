// Strict UTF-8 decoding of grammar, regex and schema text: overlong forms, surrogates and
// values above U+10FFFF are errors (the lenient tokenizer decoder maps them to U+FFFD).
#pragma once

#include <cstdint>
#include <string_view>

namespace strata::grammar {

class Utf8Reader {
 public:
  explicit Utf8Reader(std::string_view s) : s_(s) {}

  bool done() const { return pos_ >= s_.size(); }
  size_t offset() const { return pos_; }
  // The next code point, or -1 for a malformed sequence (the position is then unchanged).
  int32_t next() {
    if (done()) return -1;
    const auto b0 = static_cast<uint8_t>(s_[pos_]);
    if (b0 < 0x80) {
      ++pos_;
      return b0;
    }
    size_t n;
    uint32_t c, min;
    if ((b0 & 0xE0) == 0xC0)
      n = 2, c = b0 & 0x1F, min = 0x80;
    else if ((b0 & 0xF0) == 0xE0)
      n = 3, c = b0 & 0x0F, min = 0x800;
    else if ((b0 & 0xF8) == 0xF0)
      n = 4, c = b0 & 0x07, min = 0x10000;
    else
      return -1;
    if (pos_ + n > s_.size()) return -1;
    for (size_t i = 1; i < n; ++i) {
      const auto b = static_cast<uint8_t>(s_[pos_ + i]);
      if ((b & 0xC0) != 0x80) return -1;
      c = (c << 6) | (b & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return -1;
    pos_ += n;
    return static_cast<int32_t>(c);
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace strata::grammar
