// Python str semantics on UTF-8: expected values are CPython 3.11's (repr, json.dumps,
// split, strip, ...), written out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "core/check.h"
#include "template/text_util.h"

namespace strata::jinja {
namespace {

TEST(PyFloatRepr, MatchesCPython) {
  const std::pair<double, const char*> cases[] = {
      {0.1, "0.1"},
      {1e16, "1e+16"},
      {1e15, "1000000000000000.0"},
      {1e-5, "1e-05"},
      {0.0001, "0.0001"},
      {-0.0, "-0.0"},
      {1.0 / 3.0, "0.3333333333333333"},
      {123456789012345678.0, "1.2345678901234568e+17"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {100.0, "100.0"},
      {2.5e-10, "2.5e-10"},
      {1e22, "1e+22"},
      {12345.678, "12345.678"},
      {0.1 + 0.2, "0.30000000000000004"},
      {std::numeric_limits<double>::infinity(), "inf"},
      {-std::numeric_limits<double>::infinity(), "-inf"},
  };
  for (const auto& [v, expected] : cases) EXPECT_EQ(py_float_repr(v), expected) << v;
  EXPECT_EQ(py_float_repr(std::nan("")), "nan");
}

TEST(PyStrRepr, QuotesAndEscapesLikeCPython) {
  EXPECT_EQ(py_str_repr("a'b"), "\"a'b\"");
  EXPECT_EQ(py_str_repr("a\"b"), "'a\"b'");
  EXPECT_EQ(py_str_repr("a'\"b"), "'a\\'\"b'");
  EXPECT_EQ(
      py_str_repr(std::string("\x00\x7f", 2) + "\xc2\x80\xc2\xa0"
                                               "\xc3\xa9\xe2\x80\xa8\xe6\x97\xa5\xf0\x9f\x98\x80\t\n\\"),
      "'\\x00\\x7f\\x80\\xa0\xc3\xa9\\u2028\xe6\x97\xa5\xf0\x9f\x98\x80\\t\\n\\\\'");
}

TEST(JsonQuote, MatchesJsonDumps) {
  const std::string s = "\xc3\xa9\x01\"\\/\xe2\x80\xa8\xf0\x9f\x98\x80\x7f";
  std::string out;
  json_quote(out, s, false);
  EXPECT_EQ(out, "\"\xc3\xa9\\u0001\\\"\\\\/\xe2\x80\xa8\xf0\x9f\x98\x80\x7f\"");
  out.clear();
  json_quote(out, "\xc3\xa9\x01\xf0\x9f\x98\x80\x7f\b\f\r\t", true);
  EXPECT_EQ(out, "\"\\u00e9\\u0001\\ud83d\\ude00\\u007f\\b\\f\\r\\t\"");
}

TEST(Utf8, CodePointsAndInvalidBytesRoundTrip) {
  EXPECT_EQ(utf8_length("h\xc3\xa9llo \xf0\x9f\x98\x80"), 7u);
  const std::string invalid = "a\xff\xc3(b\xe2\x82";  // stray, truncated and bad continuation bytes
  EXPECT_EQ(utf8_length(invalid), invalid.size());
  EXPECT_EQ(utf8_encode(utf8_decode(invalid)), invalid);
  EXPECT_EQ(utf8_offsets("\xc3\xa9x"), (std::vector<size_t>{0, 2, 3}));
  // Overlong encodings and surrogates are not valid UTF-8 either.
  EXPECT_EQ(utf8_length("\xc0\xaf\xed\xa0\x80"), 5u);
}

TEST(PySplit, WhitespaceAndSeparatorForms) {
  using V = std::vector<std::string>;
  const std::string comma = ",";
  EXPECT_EQ(py_split("  a  b ", nullptr, -1), (V{"a", "b"}));
  EXPECT_EQ(py_split(" a b ", nullptr, 1), (V{"a", "b "}));
  EXPECT_EQ(py_split("a,,b", &comma, -1), (V{"a", "", "b"}));
  EXPECT_EQ(py_rsplit("a,b,c", &comma, 1), (V{"a,b", "c"}));
  EXPECT_EQ(py_rsplit(" a b ", nullptr, 1), (V{" a", "b"}));
  EXPECT_EQ(py_split("", nullptr, -1), V{});
  EXPECT_EQ(py_split("", &comma, -1), V{""});
  const std::string empty;
  EXPECT_THROW(py_split("abc", &empty, -1), strata::Error);
  EXPECT_EQ(py_splitlines("a\r\nb\x0b"
                          "c\x1c"
                          "d\xe2\x80\xa8"
                          "e",
                          false),
            (V{"a", "b", "c", "d", "e"}));
  EXPECT_EQ(py_splitlines("x\n", true), V{"x\n"});
}

TEST(PyStrip, UnicodeWhitespace) {
  // ' \u3000x\xa0\u200b '.strip() == 'x\xa0\u200b' (U+200B is not whitespace).
  EXPECT_EQ(py_strip(" \xe3\x80\x80x\xc2\xa0\xe2\x80\x8b ", nullptr, true, true), "x\xc2\xa0\xe2\x80\x8b");
  const std::string chars = "xy";
  EXPECT_EQ(py_strip("xyaxy", &chars, true, false), "axy");
  EXPECT_EQ(py_strip("xyaxy", &chars, false, true), "xya");
}

TEST(PyFindReplace, CodePointIndices) {
  EXPECT_EQ(py_find("h\xc3\xa9llo", "l", 0, 100, false), 2);
  EXPECT_EQ(py_find("h\xc3\xa9llo", "l", 0, 3, true), 2);
  EXPECT_EQ(py_find("hello", "z", 0, 100, false), -1);
  EXPECT_EQ(py_replace("abc", "", "-", -1, 1000), "-a-b-c-");
  EXPECT_EQ(py_replace("aaa", "a", "b", 2, 1000), "bba");
  EXPECT_THROW(py_replace("aaaa", "a", "bbbb", -1, 10), strata::Error);
  EXPECT_EQ(py_count("banana", "an"), 2);
  EXPECT_EQ(py_count("banana", ""), 7);
}

TEST(FindBytes, AgreesWithStdFindOnRandomStrings) {
  // std::string::find is the (quadratic but simple) reference.
  std::mt19937 rng(7);
  for (int iter = 0; iter < 3000; ++iter) {
    std::string hay, needle;
    const size_t n = rng() % 40, m = 1 + rng() % 6;
    for (size_t i = 0; i < n; ++i) hay.push_back("ab"[rng() % 2]);
    for (size_t i = 0; i < m; ++i) needle.push_back("ab"[rng() % 2]);
    const size_t from = rng() % (n + 2);
    EXPECT_EQ(find_bytes(hay, needle, from), hay.find(needle, from))
        << hay << " / " << needle << " @" << from;
    EXPECT_EQ(rfind_bytes(hay, needle), hay.rfind(needle)) << hay << " / " << needle;
  }
}

TEST(FindBytes, AdversarialInputIsLinear) {
  // A naive search would need ~2.5e11 comparisons here.
  const std::string hay(1'000'000, 'a');
  const std::string needle = std::string(500'000, 'a') + "b";
  EXPECT_EQ(find_bytes(hay, needle), std::string::npos);
  EXPECT_EQ(rfind_bytes(hay, needle), std::string::npos);
  EXPECT_EQ(py_count(hay, needle), 0);
}

TEST(PyCase, TitleCapitalizeLower) {
  EXPECT_EQ(py_title("they're bill's 1st"), "They'Re Bill'S 1St");
  EXPECT_EQ(py_capitalize("hELLO wORLD"), "Hello world");
  EXPECT_EQ(py_lower("\xc3\x89"
                     "COLE"),
            "\xc3\xa9"
            "cole");  // ÉCOLE -> école
}

}  // namespace
}  // namespace strata::jinja
