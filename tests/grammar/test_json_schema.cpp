// JSON Schema -> grammar: every output the constraint lets through parses and validates
// against its schema with an independent validator (Debian's python3-jsonschema), over the
// schema suite in data/schemas.json; unsupported keywords are errors naming the keyword.
#include <gtest/gtest.h>

#include "common/fixtures.h"
#include "grammar/json_schema.h"
#include "grammar/limits.h"
#include "grammar_test_util.h"

namespace strata::test {
namespace {

using Json = nlohmann::ordered_json;

Json schema_suite() {
  return Json::parse(read_file(source_dir() + "/tests/grammar/data/schemas.json"));
}

// Random outputs of every schema of the suite with one vocabulary, validated in one batch.
void check_suite(const std::string& vocab_path, int walks_per_schema) {
  const auto vocab = shared_vocab(vocab_path);
  const Json suite = schema_suite();
  ASSERT_GE(suite.size(), 50u);
  nlohmann::json cases = nlohmann::json::array();
  size_t n_instances = 0;
  for (const Json& entry : suite) {
    const std::string name = entry["name"];
    std::shared_ptr<const grammar::GrammarConstraintFactory> f;
    try {
      f = grammar::compile_constraint(schema_spec(entry["schema"]), vocab);
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": " << e.what();
      continue;
    }
    nlohmann::json instances = nlohmann::json::array();
    for (int k = 0; k < walks_per_schema; ++k) {
      const Walk w = random_walk(*f, 1000 * static_cast<uint64_t>(k) + n_instances, 3 + 9 * k);
      EXPECT_TRUE(w.complete) << name << ": " << w.text;
      instances.push_back(w.text);
      ++n_instances;
    }
    cases.push_back({{"name", name},
                     {"schema", nlohmann::json::parse(entry["schema"].dump())},
                     {"instances", instances}});
  }
  const nlohmann::json failures = validate_with_jsonschema(cases);
  EXPECT_TRUE(failures.empty()) << failures.size() << " of " << n_instances << " outputs are invalid:\n"
                                << failures.dump(1).substr(0, 6000);
}

TEST(JsonSchema, OutputsValidateWithLlamaVocabulary) {
  check_suite("vocab/ggml-vocab-llama-spm.gguf", 8);
}
TEST(JsonSchema, OutputsValidateWithGpt2Vocabulary) {
  check_suite("vocab/ggml-vocab-gpt-2.gguf", 4);
}

std::string error_of(const std::string& schema_text) {
  try {
    grammar::json_schema_grammar(Json::parse(schema_text));
  } catch (const grammar::GrammarError& e) {
    return e.what();
  }
  return "";
}

TEST(JsonSchema, UnsupportedKeywordsAreNamed) {
  EXPECT_NE(error_of(R"({"type": "object", "properties": {"a": {"not": {"type": "string"}}}})").find("'not'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"type": "integer", "multipleOf": 3})").find("'multipleOf'"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "array", "uniqueItems": true})").find("'uniqueItems'"), std::string::npos);
  EXPECT_NE(error_of(R"({"patternProperties": {"^a": {}}})").find("'patternProperties'"), std::string::npos);
  EXPECT_NE(error_of(R"({"if": {}, "then": {}})").find("'if'"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "string", "format": "color"})").find("'color'"), std::string::npos);
  // Where: the path of the offending schema.
  EXPECT_NE(error_of(R"({"properties": {"deep": {"items": {"minProperties": 1}}}})")
                .find("#/properties/deep/items"),
            std::string::npos);
}

TEST(JsonSchema, InvalidSchemasAreErrors) {
  EXPECT_NE(error_of(R"(false)"), "");
  EXPECT_NE(error_of(R"({"type": "strnig"})").find("strnig"), std::string::npos);
  EXPECT_NE(error_of(R"({"$ref": "#/$defs/missing"})").find("points to nothing"), std::string::npos);
  EXPECT_NE(error_of(R"({"$ref": "http://example.com/s.json"})").find("only references"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "string", "pattern": "(a"})").find("pattern"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "string", "minLength": 5, "maxLength": 2})"), "");
  EXPECT_NE(error_of(R"({"type": "array", "prefixItems": [{}], "items": false, "minItems": 2})"), "");
  EXPECT_NE(error_of(R"({"enum": []})"), "");
  EXPECT_NE(error_of(R"({"type": "object", "required": ["a"], "additionalProperties": false})").find("'a'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"allOf": [{"type": "string"}, {"type": "integer"}]})"), "");
  EXPECT_NE(error_of(R"({"type": "integer", "minimum": 5, "maximum": 4})"), "");
  // A schema that only refers to itself never produces a value: left recursion.
  try {
    grammar::compile_grammar(
        grammar::json_schema_grammar(Json::parse(R"({"anyOf": [{"$ref": "#"}, {"type": "null"}]})")));
    ADD_FAILURE() << "left-recursive schema compiled";
  } catch (const grammar::GrammarError& e) {
    EXPECT_NE(std::string(e.what()).find("left recursion"), std::string::npos) << e.what();
  }
}

// Several schemas in one grammar (as a tool-calling grammar puts one per tool): rule names
// are prefixed, so they do not collide.
TEST(JsonSchema, SchemasComposeIntoOneGrammar) {
  grammar::GrammarAst ast;
  const Json a =
      Json::parse(R"({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]})");
  const Json b =
      Json::parse(R"({"type": "array", "items": {"type": "string", "maxLength": 2}, "maxItems": 2})");
  const grammar::ExprId ea = grammar::add_json_schema(ast, a, "tool-a-");
  const grammar::ExprId eb = grammar::add_json_schema(ast, b, "tool-b-");
  ast.root =
      ast.add_rule("root", ast.alt({ast.seq({ast.literal("A:"), ea}), ast.seq({ast.literal("B:"), eb})}));
  const grammar::Grammar g = grammar::compile_grammar(ast);
  EXPECT_TRUE(full_match(g, R"(A:{"x": 12})"));
  EXPECT_TRUE(full_match(g, R"(B:["ab", ""])"));
  EXPECT_FALSE(full_match(g, R"(A:["ab"])"));
  EXPECT_FALSE(full_match(g, R"(B:["abc"])"));
}

// Integer bounds are exact: the grammar matches exactly the integers in range, checked against
// arithmetic over every value in a window around the bounds.
TEST(JsonSchema, IntegerRangesAreExact) {
  const std::vector<std::pair<int64_t, int64_t>> ranges = {{-17, 1234}, {0, 0},  {5, 12},   {-100, -3},
                                                           {7, 10000},  {-9, 9}, {99, 101}, {-1000, 999}};
  for (const auto& [lo, hi] : ranges) {
    const Json schema = {{"type", "integer"}, {"minimum", lo}, {"maximum", hi}};
    const grammar::Grammar g = grammar::compile_grammar(grammar::json_schema_grammar(schema));
    for (int64_t v = lo - 50; v <= hi + 50; ++v) {
      EXPECT_EQ(full_match(g, std::to_string(v)), v >= lo && v <= hi) << lo << ".." << hi << ": " << v;
    }
    EXPECT_FALSE(full_match(g, "-0")) << "negative zero";
    EXPECT_FALSE(full_match(g, "007")) << "leading zeros";
  }
}

}  // namespace
}  // namespace strata::test
