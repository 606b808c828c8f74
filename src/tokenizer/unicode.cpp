#include "tokenizer/unicode.h"

#include <algorithm>
#include <array>
#include <map>
#include <memory>

namespace strata::unicode {
namespace {

constexpr uint32_t kBlockBits = 8;
constexpr uint32_t kBlockSize = 1u << kBlockBits;
constexpr uint32_t kBlockCount = (kMaxCodepoint + 1) >> kBlockBits;

uint16_t class_flag(UnicodeClass cls) {
  switch (cls) {
    case UnicodeClass::Letter:
      return kLetter;
    case UnicodeClass::Number:
      return kNumber;
    case UnicodeClass::Punctuation:
      return kPunctuation;
    case UnicodeClass::Symbol:
      return kSymbol;
    case UnicodeClass::Mark:
      return kMark;
    case UnicodeClass::Separator:
      return kSeparator;
    case UnicodeClass::Other:
      return kOther;
    case UnicodeClass::Unassigned:
      break;
  }
  return kUnassigned;
}

// Two-stage lookup table built once from the generated ranges: blocks of 256 code points, equal
// blocks shared (about 100 KiB instead of 2 MiB for a flat table).
class FlagTable {
 public:
  FlagTable() {
    std::vector<uint16_t> flat(kMaxCodepoint + 1, kUnassigned);
    for (size_t i = 0; i < kClassRangeCount; ++i) {
      const ClassRange& r = kClassRanges[i];
      std::fill(flat.begin() + r.first, flat.begin() + r.last + 1, class_flag(r.cls));
    }
    for (size_t i = 0; i < kWhiteSpaceRangeCount; ++i)
      for (uint32_t cp = kWhiteSpaceRanges[i].first; cp <= kWhiteSpaceRanges[i].last; ++cp)
        flat[cp] |= kWhitespace;
    std::map<std::array<uint16_t, kBlockSize>, uint16_t> seen;
    index_.resize(kBlockCount);
    for (uint32_t b = 0; b < kBlockCount; ++b) {
      std::array<uint16_t, kBlockSize> block;
      std::copy_n(flat.begin() + (b << kBlockBits), kBlockSize, block.begin());
      auto [it, inserted] = seen.emplace(block, static_cast<uint16_t>(blocks_.size() / kBlockSize));
      if (inserted) blocks_.insert(blocks_.end(), block.begin(), block.end());
      index_[b] = it->second;
    }
  }
  uint16_t get(uint32_t cp) const {
    if (cp > kMaxCodepoint) return kUnassigned;
    return blocks_[(static_cast<size_t>(index_[cp >> kBlockBits]) << kBlockBits) | (cp & (kBlockSize - 1))];
  }

 private:
  std::vector<uint16_t> index_;   // [kBlockCount] block number
  std::vector<uint16_t> blocks_;  // [n_unique_blocks * kBlockSize] flags
};

const FlagTable& flag_table() {
  static const FlagTable table;
  return table;
}

bool is_continuation(uint8_t b) {
  return (b & 0xC0) == 0x80;
}

}  // namespace

uint16_t codepoint_flags(uint32_t cp) {
  return flag_table().get(cp);
}

UnicodeClass codepoint_class(uint32_t cp) {
  const uint16_t f = codepoint_flags(cp);
  if (f & kLetter) return UnicodeClass::Letter;
  if (f & kNumber) return UnicodeClass::Number;
  if (f & kPunctuation) return UnicodeClass::Punctuation;
  if (f & kSymbol) return UnicodeClass::Symbol;
  if (f & kMark) return UnicodeClass::Mark;
  if (f & kSeparator) return UnicodeClass::Separator;
  if (f & kOther) return UnicodeClass::Other;
  return UnicodeClass::Unassigned;
}

uint32_t decode_utf8(std::string_view s, size_t& pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t b0 = byte(pos);
  const size_t avail = s.size() - pos;
  if (b0 < 0x80) {
    pos += 1;
    return b0;
  }
  if ((b0 & 0xE0) == 0xC0 && avail >= 2 && is_continuation(byte(pos + 1))) {
    const uint32_t cp = (uint32_t{b0 & 0x1Fu} << 6) | (byte(pos + 1) & 0x3Fu);
    pos += 2;
    return cp;
  }
  if ((b0 & 0xF0) == 0xE0 && avail >= 3 && is_continuation(byte(pos + 1)) && is_continuation(byte(pos + 2))) {
    const uint32_t cp =
        (uint32_t{b0 & 0x0Fu} << 12) | ((byte(pos + 1) & 0x3Fu) << 6) | (byte(pos + 2) & 0x3Fu);
    pos += 3;
    return cp;
  }
  if ((b0 & 0xF8) == 0xF0 && avail >= 4 && is_continuation(byte(pos + 1)) && is_continuation(byte(pos + 2)) &&
      is_continuation(byte(pos + 3))) {
    const uint32_t cp = (uint32_t{b0 & 0x07u} << 18) | ((byte(pos + 1) & 0x3Fu) << 12) |
                        ((byte(pos + 2) & 0x3Fu) << 6) | (byte(pos + 3) & 0x3Fu);
    pos += 4;
    return cp;
  }
  pos += 1;
  return kReplacementChar;
}

std::vector<uint32_t> to_codepoints(std::string_view s) {
  std::vector<uint32_t> cps;
  cps.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) cps.push_back(decode_utf8(s, pos));
  return cps;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp > kMaxCodepoint) cp = kReplacementChar;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string to_utf8(uint32_t cp) {
  std::string s;
  append_utf8(s, cp);
  return s;
}

Utf8Scan scan_utf8(std::string_view s, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[pos + i]); };
  const uint8_t b0 = byte(0);
  if (b0 < 0x80) return {Utf8Scan::kValid, 1};
  // Allowed range of the second byte and total length, by lead byte (Unicode Table 3-7).
  uint8_t lo = 0x80, hi = 0xBF;
  size_t len = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {Utf8Scan::kInvalid, 1};
  }
  const size_t avail = s.size() - pos;
  for (size_t i = 1; i < len; ++i) {
    if (i >= avail) return {Utf8Scan::kTruncated, avail};
    const uint8_t b = byte(i);
    const bool ok = i == 1 ? (b >= lo && b <= hi) : is_continuation(b);
    if (!ok) return {Utf8Scan::kInvalid, i};
  }
  return {Utf8Scan::kValid, len};
}

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    const Utf8Scan scan = scan_utf8(s, pos);
    if (scan.kind == Utf8Scan::kValid)
      out.append(s.substr(pos, scan.length));
    else
      append_utf8(out, kReplacementChar);
    pos += scan.length;
  }
  return out;
}

}  // namespace strata::unicode
