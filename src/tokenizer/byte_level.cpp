#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/unicode.h"

namespace strata::byte_level {
namespace {

bool stands_for_itself(int b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
}

struct Tables {
  std::array<uint32_t, 256> codepoint{};
  std::array<std::string, 256> text;
  std::array<int16_t, 0x144> byte_of{};  // code points < 0x144 cover all 256 symbols

  Tables() {
    byte_of.fill(-1);
    uint32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      codepoint[b] = stands_for_itself(b) ? static_cast<uint32_t>(b) : next++;
      text[b] = unicode::to_utf8(codepoint[b]);
      byte_of[codepoint[b]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const std::string& byte_to_symbol(uint8_t b) {
  return tables().text[b];
}

uint32_t byte_to_codepoint(uint8_t b) {
  return tables().codepoint[b];
}

int codepoint_to_byte(uint32_t cp) {
  return cp < tables().byte_of.size() ? tables().byte_of[cp] : -1;
}

std::string encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += byte_to_symbol(static_cast<uint8_t>(c));
  return out;
}

std::string decode(std::string_view symbols) {
  std::string out;
  out.reserve(symbols.size());
  size_t pos = 0;
  while (pos < symbols.size()) {
    const size_t start = pos;
    const uint32_t cp = unicode::decode_utf8(symbols, pos);
    const int b = codepoint_to_byte(cp);
    if (b >= 0 && cp != unicode::kReplacementChar)
      out += static_cast<char>(b);
    else
      out.append(symbols.substr(start, pos - start));
  }
  return out;
}

}  // namespace strata::byte_level
