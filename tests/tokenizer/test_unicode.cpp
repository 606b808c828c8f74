// Unicode classes and UTF-8 handling: the generated tables against the Unicode Character
// Database files (parsed here independently of tools/gen_unicode_tables.py), hand-picked code
// points, and U+FFFD replacement against Python's bytes.decode(errors="replace").
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "tokenizer/byte_level.h"
#include "tokenizer/unicode.h"
#include "tokenizer_test_util.h"

namespace strata::test {
namespace {

using unicode::UnicodeClass;

UnicodeClass class_of_category(const std::string& gc) {
  if (gc == "Cn") return UnicodeClass::Unassigned;
  switch (gc[0]) {
    case 'L':
      return UnicodeClass::Letter;
    case 'N':
      return UnicodeClass::Number;
    case 'P':
      return UnicodeClass::Punctuation;
    case 'S':
      return UnicodeClass::Symbol;
    case 'M':
      return UnicodeClass::Mark;
    case 'Z':
      return UnicodeClass::Separator;
    default:
      return UnicodeClass::Other;
  }
}

TEST(Unicode, ClassesMatchUnicodeData) {
  std::ifstream in("/usr/share/unicode/UnicodeData.txt");
  ASSERT_TRUE(in) << "Debian package unicode-data is required";
  std::vector<UnicodeClass> expected(unicode::kMaxCodepoint + 1, UnicodeClass::Unassigned);
  uint32_t range_first = 0;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ';');) f.push_back(x);
    const uint32_t cp = std::stoul(f[0], nullptr, 16);
    if (f[1].find(", First>") != std::string::npos) {
      range_first = cp;
      continue;
    }
    const uint32_t first = f[1].find(", Last>") != std::string::npos ? range_first : cp;
    for (uint32_t c = first; c <= cp; ++c) expected[c] = class_of_category(f[2]);
  }
  size_t mismatches = 0;
  for (uint32_t cp = 0; cp <= unicode::kMaxCodepoint; ++cp)
    if (unicode::codepoint_class(cp) != expected[cp] && ++mismatches < 10)
      ADD_FAILURE() << "U+" << std::hex << cp;
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(std::string(unicode::kUnicodeVersion), "15.0.0");
}

TEST(Unicode, WhitespaceIsTheWhiteSpaceProperty) {
  const std::vector<uint32_t> ws = {0x09,   0x0A,   0x0B,   0x0C,   0x0D,   0x20,   0x85,   0xA0,   0x1680,
                                    0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008,
                                    0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000};
  size_t count = 0;
  for (uint32_t cp = 0; cp <= unicode::kMaxCodepoint; ++cp) count += unicode::is_whitespace(cp);
  EXPECT_EQ(count, ws.size());
  for (uint32_t cp : ws) EXPECT_TRUE(unicode::is_whitespace(cp)) << cp;
  for (uint32_t cp : {0x1Cu, 0x1Fu, 0x200Bu, 0x180Eu, 0xFEFFu})
    EXPECT_FALSE(unicode::is_whitespace(cp)) << cp;
}

TEST(Unicode, HandPickedCodepoints) {
  EXPECT_TRUE(unicode::is_letter('A'));
  EXPECT_TRUE(unicode::is_letter(0x4E2D));  // 中
  EXPECT_TRUE(unicode::is_letter(0xAC00));  // 가 (inside the Hangul range)
  EXPECT_TRUE(unicode::is_number('7'));
  EXPECT_TRUE(unicode::is_number(0xBD));                               // ½ (No)
  EXPECT_TRUE(unicode::is_number(0x216B));                             // Ⅻ (Nl)
  EXPECT_TRUE(unicode::is_punctuation(0x3002));                        // 。
  EXPECT_FALSE(unicode::is_punctuation('$'));                          // Sc
  EXPECT_EQ(unicode::codepoint_class(0x20AC), UnicodeClass::Symbol);   // €
  EXPECT_EQ(unicode::codepoint_class(0x1F999), UnicodeClass::Symbol);  // 🦙
  EXPECT_EQ(unicode::codepoint_class(0x0301), UnicodeClass::Mark);
  EXPECT_EQ(unicode::codepoint_class(0x3000), UnicodeClass::Separator);
  EXPECT_EQ(unicode::codepoint_class(0x0378), UnicodeClass::Unassigned);
  EXPECT_EQ(unicode::codepoint_class(0xE000), UnicodeClass::Other);  // private use
  EXPECT_EQ(unicode::codepoint_class(0x110000), UnicodeClass::Unassigned);
  EXPECT_TRUE(unicode::codepoint_flags(0x110000) & unicode::kUnassigned);
}

TEST(Unicode, LenientDecodingLikeLlamaCpp) {
  // Valid sequences, a truncated one, a stray continuation byte, an overlong form (accepted).
  const std::string s =
      "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\xA6\x99\xE4\xB8"
      "b\x80\xC0\x80";
  EXPECT_EQ(unicode::to_codepoints(s),
            (std::vector<uint32_t>{'a', 0xE9, 0x4E2D, 0x1F999, 0xFFFD, 0xFFFD, 'b', 0xFFFD, 0}));
  std::string out;
  for (uint32_t cp : {0x24u, 0xA2u, 0x20ACu, 0x10348u}) unicode::append_utf8(out, cp);
  EXPECT_EQ(out, "$\xC2\xA2\xE2\x82\xAC\xF0\x90\x8D\x88");
  EXPECT_EQ(unicode::to_utf8(0x110000), "\xEF\xBF\xBD");
}

TEST(Unicode, ReplacementMatchesPython) {
  std::mt19937 rng(7);
  const std::vector<uint8_t> interesting = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0,
                                            0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xED,
                                            0xEE, 0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xFF};
  std::vector<std::string> inputs = {
      "", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE0\x80\x80", "\xF0\x9F\xA6", "\xE2\x82", "ok\xFF"};
  for (int i = 0; i < 500; ++i) {
    std::string s;
    const int n = static_cast<int>(rng() % 12);
    for (int k = 0; k < n; ++k) s += static_cast<char>(interesting[rng() % interesting.size()]);
    inputs.push_back(s);
  }
  nlohmann::json hex = nlohmann::json::array();
  for (const std::string& s : inputs) {
    std::string h;
    for (unsigned char c : s) {
      char b[3];
      std::snprintf(b, sizeof b, "%02x", c);
      h += b;
    }
    hex.push_back(h);
  }
  const std::string script =
      "import json, sys\n"
      "print(json.dumps([bytes.fromhex(h).decode('utf-8', 'replace').encode('utf-8').hex() "
      "for h in json.load(sys.stdin)]))\n";
  const auto expected = nlohmann::json::parse(run_python(script, hex.dump()));
  ASSERT_EQ(expected.size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string h;
    for (unsigned char c : unicode::sanitize_utf8(inputs[i])) {
      char b[3];
      std::snprintf(b, sizeof b, "%02x", c);
      h += b;
    }
    EXPECT_EQ(h, expected[i].get<std::string>()) << "input " << hex[i];
  }
}

TEST(ByteLevel, Gpt2ByteMap) {
  // Printable bytes stand for themselves; the others are numbered from U+0100 in byte order.
  EXPECT_EQ(byte_level::byte_to_codepoint('A'), uint32_t{'A'});
  EXPECT_EQ(byte_level::byte_to_codepoint(0x00), 0x100u);
  EXPECT_EQ(byte_level::byte_to_codepoint(' '), 0x120u);   // "Ġ"
  EXPECT_EQ(byte_level::byte_to_codepoint('\n'), 0x10Au);  // "Ċ"
  EXPECT_EQ(byte_level::byte_to_codepoint(0xAD), 0x143u);
  EXPECT_EQ(byte_level::byte_to_symbol(' '), "\xC4\xA0");
  for (int b = 0; b < 256; ++b)
    EXPECT_EQ(byte_level::codepoint_to_byte(byte_level::byte_to_codepoint(static_cast<uint8_t>(b))), b);
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  EXPECT_EQ(byte_level::decode(byte_level::encode(all)), all);
  EXPECT_EQ(byte_level::codepoint_to_byte(0x4E2D), -1);
}

}  // namespace
}  // namespace strata::test
