// GBNF as llama.cpp reads it: the syntax (literals, classes, escapes, groups, repetitions,
// comments, rules over several lines), grammars in the style of llama.cpp's grammars/ folder
// (written here from their descriptions: JSON, arithmetic, lists, chess moves, Japanese text)
// with strings they must accept and reject, and the errors (line:column) for broken ones.
#include <gtest/gtest.h>

#include "grammar/gbnf_parser.h"
#include "grammar/limits.h"
#include "grammar_test_util.h"

namespace strata::test {
namespace {

using grammar::GrammarError;

struct Expect {
  std::vector<std::string> accept, reject;
};

void check(const std::string& gbnf, const Expect& e) {
  const grammar::Grammar g = compile_gbnf(gbnf);
  for (const std::string& s : e.accept) EXPECT_TRUE(full_match(g, s)) << "should accept: " << s;
  for (const std::string& s : e.reject) EXPECT_FALSE(full_match(g, s)) << "should reject: " << s;
}

std::string error_of(const std::string& gbnf) {
  try {
    compile_gbnf(gbnf);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "";
}

TEST(Gbnf, LiteralsAlternativesAndPrefixes) {
  const auto g = compile_gbnf("root ::= \"ab\" | \"cd\" \"e\"\n");
  EXPECT_TRUE(full_match(g, "ab"));
  EXPECT_TRUE(full_match(g, "cde"));
  EXPECT_FALSE(full_match(g, "cd"));
  EXPECT_TRUE(prefix_ok(g, "cd"));
  EXPECT_FALSE(prefix_ok(g, "ac"));
  EXPECT_FALSE(full_match(g, ""));
}

TEST(Gbnf, ClassesRangesNegationAndAnyChar) {
  check(R"g(root ::= [a-c] [^a-z0-9] [xyz-] .)g",
        {{"a!x.", "c-zé", "bZ-\n", "a日y日"}, {"d!x.", "aa x.", "a!w.", "a!x"}});
  // Classes and '.' are code points: a 3-byte character is one '.'.
  check(R"g(root ::= . .)g", {{"日本", "ab", "é\n"}, {"日", "abc"}});
  check(R"g(root ::= [^\n]+ "\n")g", {{"hello\n", "日本\n"}, {"\n", "a\nb\n"}});
}

TEST(Gbnf, Escapes) {
  check(R"g(root ::= "\x41\u00e9\U0001F600\t\r\n\\\"\[\]")g", {{"Aé😀\t\r\n\\\"[]"}, {"A"}});
  check(R"g(root ::= [\x30-\x39\]]+)g", {{"0123", "]9]"}, {"a", ""}});
}

TEST(Gbnf, Repetitions) {
  check(R"g(root ::= "a"* "b"+ "c"? "d"{2} "e"{1,2} "f"{2,})g",
        {{"bddeff", "aabbbcddeeffff"}, {"ddeff", "bdeff", "bddeeeff", "bddef", "bcc ddeff"}});
  // A repeated literal repeats as a whole, a group too.
  check(R"g(root ::= "ab"{2} ("x" | "yz")*)g", {{"abab", "ababxyzx"}, {"abb", "ababy"}});
  check(R"g(root ::= [0-9]{0,3})g", {{"", "1", "123"}, {"1234", "a"}});
}

TEST(Gbnf, CommentsMultiLineRulesAndEmptyAlternatives) {
  check(R"g(# a comment
root ::= greeting ws name   # trailing comment
greeting ::= "hi" |
             "hello"
name ::= (
  "bob"
  | "alice"
)
ws ::= | " " ws
)g",
        {{"hibob", "hello  alice", "hi alice"}, {"hi", "hey bob", "hibobs"}});
}

TEST(Gbnf, RulesReferenceEachOtherAndRecurse) {
  // Balanced parentheses: right recursion.
  check("root ::= item*\nitem ::= \"(\" root \")\"\n", {{"", "()", "(())()", "((()))"}, {"(", "())", ")("}});
}

// A JSON grammar like llama.cpp's json.gbnf.
const char* kJson = R"g(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
)g";

TEST(Gbnf, JsonGrammar) {
  check(kJson, {{R"g({})g", R"g({"a": 1})g", R"g({"a":[1, -2.5e+3, true, null, {"b": "c\n\u00e9"}]} )g",
                 "{\"k\": \"日本\",\n  \"n\": [ ]}"},
                {R"g([])g", R"g({"a": 01x})g", R"g({"a": 1,})g", R"g({'a': 1})g", "{\"a\": \"\x01\"}",
                 R"g({"a": "\q"})g"}});
}

// An arithmetic grammar like llama.cpp's arithmetic.gbnf: lines "expr = term".
const char* kArithmetic = R"g(
root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*
)g";

TEST(Gbnf, ArithmeticGrammar) {
  check(kArithmetic, {{"1+2=3\n", "(a +b)*c = x_1\n2/4=y\n"}, {"1+2=3", "=3\n", "1++2=3\n", "A=1\n"}});
}

// A list grammar like llama.cpp's list.gbnf.
const char* kList = R"g(
root ::= item+
item ::= "- " [^\r\n\x0b\x0c\x85\u2028\u2029]+ "\n"
)g";

TEST(Gbnf, ListGrammar) {
  check(kList, {{"- milk\n", "- eggs\n- 日本\n"}, {"", "- \n", "-milk\n", "- a\n-b\n", "- a\u2028b\n"}});
}

// Chess moves in the style of llama.cpp's chess.gbnf.
const char* kChess = R"g(
root   ::= "1. " move " " move "\n" ([1-9] [0-9]? ". " move " " move "\n")+
move   ::= (pawn | nonpawn | castle) [+#]?
pawn   ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBRQ])?
nonpawn ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]
castle ::= "O-O" "-O"?
)g";

TEST(Gbnf, ChessGrammar) {
  check(kChess, {{"1. e4 e5\n2. Nf3 Nc6\n", "1. d4 d5\n2. c4 dxc4\n3. e8=Q+ O-O-O#\n"},
                 {"1. e4 e5\n", "1. e9 e5\n2. a1 a2\n", "1. Zf3 e5\n2. a1 a2\n"}});
}

// Hiragana and katakana, like llama.cpp's japanese.gbnf.
TEST(Gbnf, JapaneseGrammar) {
  check(R"g(root ::= jp+ ([ \t\n] jp+)*
jp ::= [ぁ-ゟ] | [゠-ヿ])g",
        {{"こんにちは", "カタカナ ひらがな"}, {"日本", "abc", "こんにちは "}});
}

TEST(Gbnf, NamesMayHaveDigitsDashesUnderscores) {
  check("root ::= rule-1 rule_2\nrule-1 ::= \"a\"\nrule_2 ::= \"b\"\n", {{"ab"}, {"a"}});
}

TEST(Gbnf, ErrorsNameLineAndColumn) {
  EXPECT_NE(error_of("root ::= foo\n").find("line 1, column 10: undefined rule 'foo'"), std::string::npos)
      << error_of("root ::= foo\n");
  EXPECT_NE(error_of("a ::= \"x\"\n").find("no 'root' rule"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"x\n").find("line 1"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"x\"\n  b ::= \"y\" \\z\n").find("line 2"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"\\q\"\n").find("unknown escape"), std::string::npos);
  EXPECT_NE(error_of("root ::= [ab\n").find("unterminated"), std::string::npos);
  EXPECT_NE(error_of("root ::= [z-a]\n").find("end before its start"), std::string::npos);
  EXPECT_NE(error_of("root ::= * \"a\"\n").find("must follow an item"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{3,1}\n").find("n < m"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{2\n").find("'}'"), std::string::npos);
  EXPECT_NE(error_of("root ::= (\"a\"\n").find("')'"), std::string::npos);
  EXPECT_NE(
      error_of("root ::= \"a\"\nroot ::= \"b\"\n").find("line 2, column 1: rule 'root' is defined twice"),
      std::string::npos);
  EXPECT_NE(error_of("root ::= <[12]>\n").find("token references"), std::string::npos);
  EXPECT_NE(error_of("root \"a\"\n").find("'::='"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\" ) \n").find("end of the rule"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"\xff\"\n").find("UTF-8"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"\\ud800\"\n").find("surrogate"), std::string::npos);
}

TEST(Gbnf, LeftRecursionIsRejected) {
  EXPECT_NE(error_of("root ::= root \"x\" | \"y\"\n").find("left recursion"), std::string::npos);
  const std::string indirect = error_of("root ::= a\na ::= b \"x\" | \"y\"\nb ::= a \"z\"\n");
  EXPECT_NE(indirect.find("left recursion"), std::string::npos) << indirect;
  EXPECT_NE(indirect.find("'a'"), std::string::npos) << indirect;
  // Hidden behind a rule that can match nothing.
  EXPECT_NE(error_of("root ::= e root \"x\" | \"y\"\ne ::= \"\" | \"q\"\n").find("left recursion"),
            std::string::npos);
  // Right recursion is fine.
  EXPECT_EQ(error_of("root ::= \"x\" root | \"y\"\n"), "");
}

TEST(Gbnf, UnproductiveRootIsRejected) {
  EXPECT_NE(error_of("root ::= \"x\" root\n").find("matches no string"), std::string::npos);
  // An unproductive alternative is dropped; the rest still works.
  check("root ::= \"a\" | dead\ndead ::= \"b\" dead\n", {{"a"}, {"b", "bb"}});
}

}  // namespace
}  // namespace strata::test
