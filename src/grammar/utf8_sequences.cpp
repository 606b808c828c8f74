#include "grammar/utf8_sequences.h"

#include <string>

namespace strata::grammar {
namespace {

void split_range(uint32_t lo, uint32_t hi, std::vector<ByteSequence>& out) {
  if (lo > hi) return;
  // One encoded length per run.
  static constexpr uint32_t kMaxOfLength[] = {0x7F, 0x7FF, 0xFFFF};
  for (uint32_t m : kMaxOfLength) {
    if (lo <= m && hi > m) {
      split_range(lo, m, out);
      split_range(m + 1, hi, out);
      return;
    }
  }
  if (hi <= 0x7F) {
    out.push_back({{static_cast<uint8_t>(lo), static_cast<uint8_t>(hi)}});
    return;
  }
  // Within one length: split until every byte position varies independently, i.e. the low
  // 6*i bits of lo are all 0 and of hi all 1 wherever the higher bits differ.
  for (int i = 1; i < 4; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split_range(lo, lo | m, out);
        split_range((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split_range(lo, (hi & ~m) - 1, out);
        split_range(hi & ~m, hi, out);
        return;
      }
    }
  }
  std::string a, b;
  append_utf8(lo, a);
  append_utf8(hi, b);
  ByteSequence seq;
  for (size_t k = 0; k < a.size(); ++k)
    seq.push_back({static_cast<uint8_t>(a[k]), static_cast<uint8_t>(b[k])});
  out.push_back(std::move(seq));
}

ByteSequence literal_sequence(const std::string& s) {
  ByteSequence seq;
  for (char c : s) seq.push_back({static_cast<uint8_t>(c), static_cast<uint8_t>(c)});
  return seq;
}

std::string json_escape_of(uint32_t c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\t':
      return "\\t";
    case '\n':
      return "\\n";
    case '\f':
      return "\\f";
    case '\r':
      return "\\r";
    default: {
      static const char kHex[] = "0123456789abcdef";
      std::string s = "\\u00";
      s += kHex[c >> 4];
      s += kHex[c & 15];
      return s;
    }
  }
}

}  // namespace

std::vector<ByteSequence> codepoint_byte_sequences(const CodepointSet& set, bool json_escape) {
  std::vector<ByteSequence> out;
  CodepointSet raw = set;
  if (json_escape) {
    CodepointSet special(0, 0x1F);
    special.add('"');
    special.add('\\');
    raw = set.intersect(special.complement());
    const CodepointSet escaped = set.intersect(special);
    for (const CodepointRange& r : escaped.ranges())
      for (uint32_t c = r.lo; c <= r.hi; ++c) out.push_back(literal_sequence(json_escape_of(c)));
  }
  for (const CodepointRange& r : raw.ranges()) split_range(r.lo, r.hi, out);
  return out;
}

}  // namespace strata::grammar
