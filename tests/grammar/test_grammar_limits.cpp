// Hostile grammars, regexes and schemas end in a GrammarError (a 400 for the server), with
// bounded work: no crash, no unbounded allocation, no hang.
#include <gtest/gtest.h>

#include <random>

#include "grammar/constraint_spec.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "grammar/limits.h"
#include "grammar/regex_parser.h"
#include "grammar_test_util.h"

namespace strata::test {
namespace {

using grammar::GrammarError;
using Json = nlohmann::ordered_json;

std::string compile_error(const grammar::ConstraintSpec& spec,
                          const std::string& vocab = "vocab/ggml-vocab-llama-spm.gguf") {
  try {
    grammar::compile_constraint(spec, shared_vocab(vocab));
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "";
}

TEST(GrammarLimits, HostileGbnf) {
  EXPECT_NE(compile_error(gbnf_spec(std::string(grammar::kMaxGrammarBytes + 1, ' '))), "");
  EXPECT_NE(compile_error(gbnf_spec("root ::= " + std::string(300, '(') + "\"a\"" + std::string(300, ')'))),
            "");
  EXPECT_NE(compile_error(gbnf_spec("root ::= \"a\"{10001}")), "");
  // Nested repetitions multiply: the automaton limit stops them.
  EXPECT_NE(compile_error(gbnf_spec("root ::= ((((\"ab\"{100}){100}){100}){100})")), "");
  // Many rules in a long chain of references.
  std::string chain = "root ::= r0\n";
  for (int i = 0; i < 70000; ++i)
    chain += "r" + std::to_string(i) + " ::= \"x\" r" + std::to_string(i + 1) + "\n";
  EXPECT_NE(compile_error(gbnf_spec(chain)), "");
  // Left recursion, direct and through several rules.
  EXPECT_NE(compile_error(gbnf_spec("root ::= root root | \"x\"")).find("left recursion"), std::string::npos);
  EXPECT_NE(
      compile_error(gbnf_spec("root ::= a\na ::= b | \"x\"\nb ::= c\nc ::= a \"y\"")).find("left recursion"),
      std::string::npos);
  // 3000 wide positions alike: beyond the longest piece the counting states read every token
  // the same way and share one mask (state_equivalence.h), so this compiles.
  EXPECT_EQ(compile_error(gbnf_spec("root ::= [^\\x00]{3000}")), "");
  // 3000 wide positions that all differ within a few bytes (pseudo-random choices among four
  // classes): every state needs its own mask, and the precomputation limit ends it.
  std::string wide = "root ::=";
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) wide += " [^\\x0" + std::to_string(rng() % 4) + "]";
  EXPECT_NE(compile_error(gbnf_spec(wide)).find("too complex"), std::string::npos);
}

TEST(GrammarLimits, HostileRegex) {
  EXPECT_NE(compile_error(regex_spec(std::string(grammar::kMaxRegexBytes + 1, 'a'))), "");
  EXPECT_NE(compile_error(regex_spec(std::string(500, '(') + std::string(500, ')'))), "");
  EXPECT_NE(compile_error(regex_spec("((((a{100}){100}){100}){100})")), "");
  EXPECT_NE(compile_error(regex_spec("a{1,99999}")), "");
  // Exponential subset construction falls back to the NFA and still compiles.
  EXPECT_EQ(compile_error(regex_spec("(a|b)*a(a|b){16}")), "");
}

TEST(GrammarLimits, HostileSchemas) {
  auto schema_error = [](const Json& s) { return compile_error(schema_spec(s)); };
  // Deeply nested objects.
  Json deep = {{"type", "integer"}};
  for (int i = 0; i < 300; ++i) deep = {{"type", "object"}, {"properties", {{"a", deep}}}};
  EXPECT_NE(schema_error(deep).find("deeper"), std::string::npos);
  // Huge enum and property lists.
  Json big_enum = {{"enum", Json::array()}};
  for (int i = 0; i < 20000; ++i) big_enum["enum"].push_back(i);
  EXPECT_NE(schema_error(big_enum), "");
  Json many = {{"type", "object"}, {"properties", Json::object()}};
  for (int i = 0; i < 5000; ++i) many["properties"]["p" + std::to_string(i)] = {{"type", "integer"}};
  EXPECT_NE(schema_error(many), "");
  // References that explode when expanded are shared, not copied.
  Json defs = Json::object();
  defs["d0"] = {{"type", "integer"}};
  for (int i = 1; i < 40; ++i) {
    const std::string prev = "#/$defs/d" + std::to_string(i - 1);
    defs["d" + std::to_string(i)] = {{"type", "array"},
                                     {"items", {{"$ref", prev}}},
                                     {"prefixItems", {{{"$ref", prev}}, {{"$ref", prev}}}}};
  }
  EXPECT_EQ(schema_error({{"$defs", defs}, {"$ref", "#/$defs/d39"}}), "");
  // Self-reference with nothing in between matches nothing.
  EXPECT_NE(schema_error({{"$ref", "#"}}), "");
  EXPECT_NE(schema_error({{"$defs", {{"a", {{"$ref", "#/$defs/b"}}}, {"b", {{"$ref", "#/$defs/a"}}}}},
                          {"$ref", "#/$defs/a"}}),
            "");
  // Lengths beyond the limits.
  EXPECT_NE(schema_error({{"type", "string"}, {"maxLength", 1000000}}), "");
  EXPECT_NE(schema_error({{"type", "array"}, {"minItems", 100000}}), "");
}

TEST(GrammarLimits, HostileChoices) {
  grammar::ConstraintSpec spec;
  spec.kind = grammar::ConstraintKind::Choice;
  EXPECT_NE(compile_error(spec), "");  // empty
  spec.choices.assign(grammar::kMaxChoices + 1, "x");
  EXPECT_NE(compile_error(spec), "");
}

TEST(GrammarLimits, CacheReturnsTheSameCompiledConstraint) {
  grammar::ConstraintCache cache(shared_vocab("models/stories260K/stories260K.gguf"), 2);
  const auto a = cache.get(regex_spec("a+"));
  EXPECT_EQ(cache.get(regex_spec("a+")), a);
  cache.get(regex_spec("b+"));
  cache.get(regex_spec("c+"));  // evicts a+
  EXPECT_NE(cache.get(regex_spec("a+")), a);
  EXPECT_THROW(cache.get(regex_spec("(")), GrammarError);
}

}  // namespace
}  // namespace strata::test
