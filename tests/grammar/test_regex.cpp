// Regular expressions against Python's re (Debian's python3): for every pattern, strings it
// should match (random matches of the compiled grammar, hand-written cases) and strings it
// should not (random strings over the pattern's alphabet) give the same answer as
// re.fullmatch. \d \w \s are ASCII here and Python's are Unicode, so for a string outside
// ASCII only "matched here => matched by Python" is required.
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "common/fixtures.h"
#include "grammar/limits.h"
#include "grammar/regex_parser.h"
#include "grammar_test_util.h"

namespace strata::test {
namespace {

const char* kCheckScript = R"(
import json, re, sys
for case in json.load(sys.stdin):
    p = re.compile(case["pattern"])
    print("".join("1" if p.fullmatch(s) else "0" for s in case["strings"]))
)";

struct Case {
  std::string pattern;
  std::vector<std::string> extra;  // hand-written strings to try
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"abc", {"abc", "ab", "abcd", ""}},
      {"a|b|cd", {"a", "cd", "c", "ab"}},
      {"(ab)*c", {"c", "ababc", "abc", "aba"}},
      {"(?:x|yz)+", {"x", "yzx", "", "xy"}},
      {"a{2,4}b{3}", {"aab", "aabbb", "aaaaabbb", "aaaabbb"}},
      {"a{,2}b{2,}", {"b", "bb", "abbbb", "aaabb"}},
      {"x?y*z+", {"z", "xz", "yyz", "xyyzz", "x"}},
      {"[a-f0-9]{4}", {"beef", "BEEF", "12ab", "123"}},
      {"[^a-c]+", {"xyz", "abc", "d日", "\n"}},
      {"[\\d.]+e\\d", {"1.5e3", "..e0", "1e", "e1"}},
      {"\\w+@\\w+\\.com", {"a@b.com", "a_1@x2.com", "@b.com", "a@b.org"}},
      {"\\s*\\S+\\s*", {" x ", "x", "  ", "\tab\n"}},
      {"\\D\\W", {"a!", "1!", "aa", "!!"}},
      {"[^\\d\\s]", {"a", "1", " ", "é"}},
      {".+", {"a", "日本", "\n", "a\nb"}},
      {"\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\", {".*+?()[]{}|^$\\"}},
      {"\\x41\\u00e9\\t\\n", {"Aé\t\n"}},
      {"^(cat|dog)s?$", {"cat", "dogs", "cats", "catdog", "cow"}},
      {"^ab$|^cd$", {"ab", "cd", "abcd"}},
      {"(a|ab)(c|bcd)(d*)", {"abcd", "abcdd", "ac", "abbcd"}},
      {"[-a]+[b-]", {"-a-", "ab", "a-b", "b"}},
      {"[]a]+", {"]", "a]a", "b"}},
      {"x{a}", {"x{a}", "xa"}},
      {"(?P<year>[0-9]{4})-(?P<m>[0-9]{2})", {"2024-01", "24-01"}},
      {"(a|b)*a(a|b){6}", {"abbbbbb", "aaaaaaa", "bbbbbbb", "baababab"}},  // exponential DFA: NFA fallback
      {"((a*)*b)*", {"", "b", "aab", "aaba"}},
      {"日本+語?", {"日本", "日本本語", "日語"}},
      {"[α-ω]{2,3}", {"αβ", "ωωω", "αβγδ", "ab"}},
      {"a*?b+?c??", {"ab", "aabbc", "c"}},
      {"(|a)b", {"b", "ab", "aab"}},
  };
  return c;
}

// Random strings over the characters that appear in the pattern and its strings.
std::vector<std::string> random_strings(const std::string& alphabet_src, std::mt19937_64& rng, int n) {
  std::vector<std::string> alphabet;
  for (size_t i = 0; i < alphabet_src.size();) {
    size_t len = 1;
    const auto b = static_cast<unsigned char>(alphabet_src[i]);
    if (b >= 0xF0)
      len = 4;
    else if (b >= 0xE0)
      len = 3;
    else if (b >= 0xC0)
      len = 2;
    alphabet.push_back(alphabet_src.substr(i, len));
    i += len;
  }
  std::vector<std::string> out;
  for (int k = 0; k < n; ++k) {
    std::string s;
    const size_t len = rng() % 9;
    for (size_t i = 0; i < len; ++i) s += alphabet[rng() % alphabet.size()];
    out.push_back(s);
  }
  return out;
}

bool is_ascii(const std::string& s) {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}

bool unicode_classes(const std::string& pattern) {
  for (const char* k : {"\\d", "\\w", "\\s", "\\D", "\\W", "\\S"})
    if (pattern.find(k) != std::string::npos) return true;
  return false;
}

TEST(Regex, MatchesLikePythonRe) {
  std::mt19937_64 rng(7);
  nlohmann::json input = nlohmann::json::array();
  std::vector<std::vector<std::string>> all;
  std::vector<grammar::Grammar> grammars;
  for (const Case& c : cases()) {
    grammars.push_back(grammar::compile_grammar(grammar::regex_grammar(c.pattern)));
    std::vector<std::string> strings = c.extra;
    for (int k = 0; k < 20; ++k) strings.push_back(random_match(grammars.back(), rng(), 1 + k));
    std::string alphabet = c.pattern + "aZ0 \n";
    for (const std::string& s : c.extra) alphabet += s;
    for (const std::string& s : random_strings(alphabet, rng, 60)) strings.push_back(s);
    input.push_back({{"pattern", c.pattern}, {"strings", strings}});
    all.push_back(std::move(strings));
  }
  const CommandResult r = run_command({"/usr/bin/python3", "-c", kCheckScript}, input.dump());
  ASSERT_EQ(r.exit_code, 0) << r.err.substr(0, 3000);
  std::istringstream lines(r.out);
  for (size_t i = 0; i < cases().size(); ++i) {
    std::string verdicts;
    ASSERT_TRUE(std::getline(lines, verdicts));
    ASSERT_EQ(verdicts.size(), all[i].size());
    const bool exact = !unicode_classes(cases()[i].pattern);
    for (size_t k = 0; k < all[i].size(); ++k) {
      const std::string& s = all[i][k];
      const bool ours = full_match(grammars[i], s);
      const bool theirs = verdicts[k] == '1';
      if (ours) {
        EXPECT_TRUE(theirs) << cases()[i].pattern << " matched " << nlohmann::json(s).dump()
                            << ", Python does not";
      }
      if (exact || is_ascii(s)) {
        EXPECT_EQ(ours, theirs) << cases()[i].pattern << " on " << nlohmann::json(s).dump();
      }
    }
    // Every random match of the grammar must be one for Python too.
    for (int k = 0; k < 20; ++k) EXPECT_EQ(verdicts[cases()[i].extra.size() + static_cast<size_t>(k)], '1');
  }
}

std::string error_of(const std::string& pattern) {
  try {
    grammar::compile_grammar(grammar::regex_grammar(pattern));
  } catch (const grammar::GrammarError& e) {
    return e.what();
  }
  return "";
}

TEST(Regex, UnsupportedConstructsAreNamed) {
  EXPECT_NE(error_of("(a)\\1").find("backreferences"), std::string::npos);
  EXPECT_NE(error_of("a(?=b)").find("lookaround"), std::string::npos);
  EXPECT_NE(error_of("(?<!a)b").find("lookaround"), std::string::npos);
  EXPECT_NE(error_of("\\bword\\b").find("word boundaries"), std::string::npos);
  EXPECT_NE(error_of("(?i)abc").find("inline flags"), std::string::npos);
  EXPECT_NE(error_of("\\p{L}").find("Unicode property"), std::string::npos);
  EXPECT_NE(error_of("a^b").find("anchor"), std::string::npos);
  EXPECT_NE(error_of("a$b").find("anchor"), std::string::npos);
  EXPECT_NE(error_of("a*+").find("possessive"), std::string::npos);
  EXPECT_NE(error_of("a**").find("multiple repeat"), std::string::npos);
  EXPECT_NE(error_of("*a").find("nothing to repeat"), std::string::npos);
  EXPECT_NE(error_of("(ab").find("')'"), std::string::npos);
  EXPECT_NE(error_of("ab)").find("unbalanced"), std::string::npos);
  EXPECT_NE(error_of("[abc").find("unterminated"), std::string::npos);
  EXPECT_NE(error_of("[z-a]").find("end before its start"), std::string::npos);
  EXPECT_NE(error_of("a{3,2}").find("n < m"), std::string::npos);
  EXPECT_NE(error_of("a{100000}").find("limited"), std::string::npos);
  EXPECT_NE(error_of("\\q").find("unknown escape"), std::string::npos);
  EXPECT_NE(error_of(std::string(200, '(') + std::string(200, ')')).find("deeper"), std::string::npos);
}

// ECMAScript's named groups (Python spells them (?P<name>...)) are plain groups.
TEST(Regex, EcmaNamedGroups) {
  const grammar::Grammar g = grammar::compile_grammar(grammar::regex_grammar("(?<y>[0-9]{2})-x"));
  EXPECT_TRUE(full_match(g, "12-x"));
  EXPECT_FALSE(full_match(g, "1-x"));
}

// Inside a JSON string the characters come out escaped: the pattern sees decoded text.
TEST(Regex, JsonEscapedCharacters) {
  grammar::GrammarAst ast;
  const grammar::ExprId e = grammar::parse_regex("\"[\\\\n]\\t", ast, /*json_escape=*/true);
  ast.root = ast.add_rule("root", e);
  const grammar::Grammar g = grammar::compile_grammar(ast);
  EXPECT_TRUE(full_match(g, "\\\"\\\\\\t"));  // \" \\ \t
  EXPECT_TRUE(full_match(g, "\\\"n\\t"));
  EXPECT_FALSE(full_match(g, "\"n\t"));  // raw quote and tab are not JSON string content
}

}  // namespace
}  // namespace strata::test
