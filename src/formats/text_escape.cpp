#include "formats/text_escape.h"

namespace strata {

std::string escape_for_message(std::string_view s, size_t max_len) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  const bool cut = s.size() > max_len;
  if (cut) s = s.substr(0, max_len);
  out.reserve(s.size() + 8);
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || c == '\\') {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  if (cut) out += "...";
  return out;
}

}  // namespace strata
