// Pre-tokenizer split rules against Python's `regex` module (Debian python3-regex, which knows
// \p{L}, \p{N}, ...) running the patterns llama.cpp uses for each tokenizer.ggml.pre, on random
// strings mixing scripts, numbers, marks, symbols and all kinds of whitespace.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer_test_util.h"

namespace strata::test {
namespace {

// Applies the pattern lists the way llama.cpp's unicode_regex_split does: each pattern splits
// every current word into its matches and the text between them. Patterns without \p{..} run
// through std::wregex in llama.cpp, whose \s does not know non-ASCII whitespace, so llama.cpp
// shows those characters to such patterns as \v; the reference does the same.
const char* kReferenceScript = R"PY(
import json, sys, regex

CONTRACTIONS = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
TAIL = r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
LLAMA3 = CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}" + TAIL
QWEN2 = CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}" + TAIL
DS_LETTERS = ("A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af"
    "\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5"
    "\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba"
    "\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45"
    "\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe"
    "\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc"
    "\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134"
    "\u2139\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee"
    "\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf"
    "\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3"
    "\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df"
    "\U0001e900-\U0001e943")
CJK = "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+"
DS_PUNCT = "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+"

RULES = {
    "gpt-2": [GPT2],
    "default": [r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", r"[0-9][0-9][0-9]"],
    "falcon": [r"[\p{P}\$\+<=>\^~\|`]+", GPT2, r"[0-9][0-9][0-9]"],
    "starcoder": [r"\p{N}", GPT2],
    "llama-bpe": [LLAMA3],
    "qwen2": [QWEN2],
    "deepseek-llm": [r"[\r\n]", r"\s?[" + DS_LETTERS + r"]+", DS_PUNCT, r"\s+\Z", CJK, r"\p{N}+"],
    "deepseek-coder": [r"[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", CJK, r"\p{N}"],
    "bloom": [" ?[^(\\s|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c)]+"],
}

def shadow(text):
    return "".join("\x0b" if ord(c) >= 0x80 and regex.match(r"\s", c) else c for c in text)

def split(rules, text):
    words = [text] if text else []
    for pattern in rules:
        literal = r"\p{" not in pattern
        out = []
        for w in words:
            subject = shadow(w) if literal else w
            pos = 0
            for m in regex.finditer(pattern, subject):
                if m.start() > pos:
                    out.append(w[pos:m.start()])
                out.append(w[m.start():m.end()])
                pos = m.end()
            if pos < len(w):
                out.append(w[pos:])
        words = out
    return [len(w) for w in words]

req = json.load(sys.stdin)
json.dump([split(RULES[req["pre"]], t) for t in req["texts"]], sys.stdout)
)PY";

std::vector<std::string> alphabet() {
  return {"a",
          "Z",
          "hello",
          "World",
          " ",
          " ",
          "  ",
          "   ",
          "\t",
          "\n",
          "\r\n",
          "\n\n",
          "\r",
          "\v",
          "\f",
          "0",
          "7",
          "12",
          "12345",
          "3.14",
          "'s",
          "'S",
          "'re",
          "'LL",
          "'ve",
          "'d",
          "'M",
          "'t",
          "'x",
          "'",
          "\"",
          "!",
          "?",
          "...",
          ",",
          "-",
          "_",
          "(",
          ")",
          "[",
          "]",
          "{",
          "}",
          "$",
          "+",
          "<",
          "=",
          ">",
          "^",
          "~",
          "|",
          "`",
          "@",
          "#",
          "%",
          "&",
          "*",
          "/",
          "\\",
          ":",
          ";",
          "é",
          "Ä",
          "ß",
          "µ",
          "ª",
          "ſ",
          "ǅ",
          "ʔ",
          "Ω",
          "\xE2\x84\xAA",  // KELVIN SIGN
          "\xE2\x84\xA6",  // OHM SIGN
          "αβγ",
          "Привет",
          "Ֆ",
          "ა",
          "中文",
          "一",
          "龥",
          "\xE9\xBE\xA6",
          "가",
          "힣",
          "あ",
          "カ",
          "\xE0\xA0\x80",
          "½",
          "Ⅻ",
          "٣",
          "²",
          "𝟘",
          "〇",
          "\xCC\x81",
          "\xE0\xA4\x83",
          "€",
          "©",
          "∑",
          "😀",
          "🦙",
          "\xC2\xA0",
          "\xE3\x80\x80",
          "\xE2\x80\x83",
          "\xE2\x80\xA8",
          "\xC2\x85",
          "\xE1\x9A\x80",
          "。",
          "，",
          "、",
          "「",
          "」",
          "…",
          "‘",
          "’",
          "“",
          "¡",
          "¿",
          "।",
          "۔",
          "،",
          "！",
          "（",
          "：",
          "～",
          "Ａ",
          "ｚ",
          "\xCD\xB8",      // unassigned U+0378
          "\xEE\x80\x80",  // private use U+E000
          "\x01",
          "\x1c",
          "\xE2\x80\x8B",
          "\xEF\xBB\xBF",
          "\xEF\xBF\xBD",
          "😶\xE2\x80\x8D🌫\xEF\xB8\x8F"};
}

std::vector<std::string> random_texts(uint32_t seed, int count) {
  std::mt19937 rng(seed);
  const std::vector<std::string> parts = alphabet();
  std::vector<std::string> texts;
  for (int i = 0; i < count; ++i) {
    std::string t;
    const int n = static_cast<int>(rng() % 24);
    for (int k = 0; k < n; ++k) t += parts[rng() % parts.size()];
    texts.push_back(t);
  }
  return texts;
}

std::vector<size_t> word_lengths(const PreTokenizer& pre, const std::string& text) {
  const std::vector<uint32_t> cps = unicode::to_codepoints(text);
  std::vector<size_t> lengths;
  size_t begin = 0;
  for (size_t end : pre.split(cps)) {
    lengths.push_back(end - begin);
    begin = end;
  }
  return lengths;
}

class PreTokenizerVsRegex : public ::testing::TestWithParam<std::string> {};

TEST_P(PreTokenizerVsRegex, SplitsLikeThePatterns) {
  bool known = false;
  const PreTokenizer pre = PreTokenizer::for_name(GetParam(), &known);
  ASSERT_TRUE(known);
  std::vector<std::string> texts = random_texts(1234, 400);
  // Hand-picked cases on top of the random ones.
  for (const char* s : {"", " ", "  ", "a  b", "a\n\n  b", "  \n x", "Hello   world!!\r\n", "123456789",
                        "'s'S'LL", "x  \xE3\x80\x80y", "中文 abc", "  trailing  ", "\t\tA"})
    texts.push_back(s);
  const nlohmann::json request = {{"pre", GetParam()}, {"texts", texts}};
  const auto expected = nlohmann::json::parse(run_python(kReferenceScript, request.dump()));
  ASSERT_EQ(expected.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i)
    EXPECT_EQ(word_lengths(pre, texts[i]), expected[i].get<std::vector<size_t>>())
        << "text: '" << texts[i] << "'";
}

INSTANTIATE_TEST_SUITE_P(Rules, PreTokenizerVsRegex,
                         ::testing::Values("gpt-2", "default", "falcon", "starcoder", "llama-bpe", "qwen2",
                                           "deepseek-llm", "deepseek-coder", "bloom"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(PreTokenizer, NamesMapToTheirFamilies) {
  // Aliases share the rules of the family llama.cpp puts them in.
  EXPECT_EQ(PreTokenizer::for_name("mpt").rules(), PreTokenizer::for_name("gpt-2").rules());
  EXPECT_EQ(PreTokenizer::for_name("olmo").rules(), PreTokenizer::for_name("gpt-2").rules());
  EXPECT_EQ(PreTokenizer::for_name("refact").rules(), PreTokenizer::for_name("starcoder").rules());
  EXPECT_EQ(PreTokenizer::for_name("llama3").rules(), PreTokenizer::for_name("llama-bpe").rules());
  EXPECT_TRUE(PreTokenizer::for_name("llama-bpe").ignore_merges());
  EXPECT_TRUE(PreTokenizer::for_name("llama-bpe").default_add_bos());
  EXPECT_FALSE(PreTokenizer::for_name("qwen2").ignore_merges());
  bool known = true;
  EXPECT_EQ(PreTokenizer::for_name("no-such-thing", &known).rules(),
            PreTokenizer::for_name("default").rules());
  EXPECT_FALSE(known);
}

TEST(PreTokenizer, HandDerivedSplits) {
  const auto words = [](const char* pre, const std::string& s) {
    const std::vector<uint32_t> cps = unicode::to_codepoints(s);
    std::vector<std::string> out;
    size_t begin = 0;
    for (size_t end : PreTokenizer::for_name(pre).split(cps)) {
      std::string w;
      for (size_t i = begin; i < end; ++i) unicode::append_utf8(w, cps[i]);
      out.push_back(w);
      begin = end;
    }
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(words("gpt-2", "Hello world's  end"), (V{"Hello", " world", "'s", " ", " end"}));
  EXPECT_EQ(words("llama-bpe", "I'M 12345 ok\n\n"), (V{"I", "'M", " ", "123", "45", " ok", "\n\n"}));
  EXPECT_EQ(words("qwen2", "ab 123"), (V{"ab", " ", "1", "2", "3"}));
  EXPECT_EQ(words("falcon", "x=1234!"), (V{"x", "=", "123", "4", "!"}));
  EXPECT_EQ(words("starcoder", "v12 "), (V{"v", "1", "2", " "}));
}

}  // namespace
}  // namespace strata::test
