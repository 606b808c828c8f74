// GPT-2's byte <-> unicode map used by byte-level BPE vocabularies: every byte is shown as a
// printable code point ('!'..'~', '¡'..'¬', '®'..'ÿ' stand for themselves, the other 68 bytes
// become U+0100.. in order), so a token's text is always valid UTF-8.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace strata::byte_level {

// UTF-8 text of the code point that stands for byte `b`.
const std::string& byte_to_symbol(uint8_t b);
// The code point that stands for byte `b`.
uint32_t byte_to_codepoint(uint8_t b);
// The byte a code point stands for, or -1 when it is not one of the 256 symbols.
int codepoint_to_byte(uint32_t cp);
// Maps every byte of `bytes` to its symbol.
std::string encode(std::string_view bytes);
// Inverse of encode() for a token text; code points outside the map are kept as UTF-8.
std::string decode(std::string_view symbols);

}  // namespace strata::byte_level
