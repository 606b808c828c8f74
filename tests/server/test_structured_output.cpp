// Structured output through the real server and engine on stories260K: every front door
// (OpenAI response_format, llama.cpp grammar / json_schema, vLLM guided_* and
// structured_outputs) on both endpoints, streaming and not. The tiny model writes nonsense, so
// every valid output here is the mask's doing; outputs are checked with independent tools
// (python3-jsonschema, Python's re). Bad and hostile inputs are 400s naming the field.
#include <gtest/gtest.h>

#include <thread>

#include "common/fixtures.h"
#include "server_fixture.h"

namespace strata::test {
namespace {

using nlohmann::json;

const json kPersonSchema = json::parse(R"({"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 8},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "mood": {"enum": ["happy", "sad"]},
    "pets": {"type": "array", "items": {"type": "string", "maxLength": 5}, "maxItems": 2}},
  "required": ["name", "age", "mood"], "additionalProperties": false})");

json post_ok(const LiveServer& s, const std::string& path, const json& body) {
  auto res = s.post(path, body);
  EXPECT_TRUE(res);
  if (!res) return json();
  EXPECT_EQ(res->status, 200) << body.dump() << "\n" << res->body;
  return json::parse(res->body);
}

std::string text_of(const json& answer, size_t i = 0) {
  const json& c = answer["choices"][i];
  return c.contains("text") ? c["text"].get<std::string>() : c["message"]["content"].get<std::string>();
}

// Validates {name, schema, instances} cases with python3-jsonschema; returns the failures.
json invalid_instances(const json& cases) {
  const CommandResult r =
      run_command({"/usr/bin/python3", source_dir() + "/tests/grammar/validate_instances.py"}, cases.dump());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out.empty() ? json::array() : json::parse(r.out);
}

bool python_fullmatch(const std::string& pattern, const std::string& text) {
  const CommandResult r =
      run_command({"/usr/bin/python3", "-c",
                   "import re, sys; print(1 if re.fullmatch(sys.argv[1], sys.stdin.read()) else 0)", pattern},
                  text);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out == "1\n";
}

json chat_body(json extra) {
  json body = {{"messages", {{{"role", "user"}, {"content", "Tell me about a person."}}}},
               {"max_tokens", 120}};
  body.update(extra);
  return body;
}

json completion_body(json extra) {
  json body = {{"prompt", "Once upon a time"}, {"max_tokens", 120}};
  body.update(extra);
  return body;
}

TEST(StructuredOutput, JsonSchemaFrontDoorsValidate) {
  LiveServer s;
  const std::vector<std::pair<std::string, json>> doors = {
      {"/v1/chat/completions",
       chat_body({{"response_format",
                   {{"type", "json_schema"},
                    {"json_schema", {{"name", "person"}, {"schema", kPersonSchema}, {"strict", true}}}}}})},
      {"/v1/completions", completion_body({{"response_format",
                                            {{"type", "json_schema"},
                                             {"json_schema", {{"name", "p"}, {"schema", kPersonSchema}}}}}})},
      {"/v1/completions", completion_body({{"json_schema", kPersonSchema}})},
      {"/v1/chat/completions",
       chat_body({{"response_format", {{"type", "json_object"}, {"schema", kPersonSchema}}}})},
      {"/v1/completions", completion_body({{"guided_json", kPersonSchema}})},
      {"/v1/chat/completions", chat_body({{"guided_json", kPersonSchema.dump()}})},
      {"/v1/completions", completion_body({{"structured_outputs", {{"json", kPersonSchema}}}})},
  };
  json instances = json::array();
  for (const auto& [path, body] : doors) {
    for (double temperature : {0.0, 1.0}) {
      json b = body;
      b["temperature"] = temperature;
      b["seed"] = 42;
      const json a = post_ok(s, path, b);
      ASSERT_FALSE(a.is_null());
      EXPECT_EQ(a["choices"][0]["finish_reason"], "stop") << b.dump() << "\n" << a.dump();
      instances.push_back(text_of(a));
    }
  }
  const json failures = invalid_instances(
      json::array({{{"name", "person"}, {"schema", kPersonSchema}, {"instances", instances}}}));
  EXPECT_TRUE(failures.empty()) << failures.dump(1);
}

TEST(StructuredOutput, JsonObjectIsAnObject) {
  LiveServer s;
  // The tiny model rarely closes what it opens: a bias on the closing characters (which the
  // mask still filters) makes objects end within the token budget.
  json bias = json::object();
  const Tokenizer& tok = stories_tokenizer();
  for (int32_t t = 0; t < tok.n_vocab(); ++t)
    if (tok.token_to_piece(t) == "}" || tok.token_to_piece(t) == "\"") bias[std::to_string(t)] = 12;
  ASSERT_GE(bias.size(), 2u);
  int complete = 0;
  for (int seed = 0; seed < 6; ++seed) {
    const json a = post_ok(s, "/v1/chat/completions",
                           chat_body({{"response_format", {{"type", "json_object"}}},
                                      {"max_tokens", 300},
                                      {"seed", seed},
                                      {"logit_bias", bias}}));
    const std::string text = text_of(a);
    if (a["choices"][0]["finish_reason"] != "stop") continue;  // ran out of tokens inside the object
    ++complete;
    const json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(parsed.is_object()) << text;
  }
  EXPECT_GE(complete, 2) << "too few objects completed to check";
  // structured_outputs.json_object too.
  const json a =
      post_ok(s, "/v1/completions",
              completion_body({{"structured_outputs", {{"json_object", true}}}, {"max_tokens", 4}}));
  EXPECT_EQ(text_of(a).substr(0, 1), "{");
}

TEST(StructuredOutput, RegexChoiceAndGrammar) {
  LiveServer s;
  const std::string pattern = "[A-Z][a-z]{2,6} (is|was) [0-9]{1,3}!";
  for (const json& extra :
       {json{{"guided_regex", pattern}}, json{{"structured_outputs", {{"regex", pattern}}}}}) {
    for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
      const json body = std::string(path) == "/v1/completions" ? completion_body(extra) : chat_body(extra);
      const json a = post_ok(s, path, body);
      EXPECT_EQ(a["choices"][0]["finish_reason"], "stop");
      EXPECT_TRUE(python_fullmatch(pattern, text_of(a))) << text_of(a);
    }
  }
  const std::vector<std::string> choices = {"red", "green", "blue sky"};
  for (const json& extra :
       {json{{"guided_choice", choices}}, json{{"structured_outputs", {{"choice", choices}}}}}) {
    const json a = post_ok(s, "/v1/completions", completion_body(extra));
    EXPECT_NE(std::find(choices.begin(), choices.end(), text_of(a)), choices.end()) << text_of(a);
    EXPECT_EQ(a["choices"][0]["finish_reason"], "stop");
  }
  // GBNF: a regular language, checked with the equivalent Python regex.
  const std::string gbnf = "root ::= \"(\" [0-9]{1,3} \")\" (\" \" word){1,3}\nword ::= [a-z]{2,5}\n";
  const std::string same = "\\([0-9]{1,3}\\)( [a-z]{2,5}){1,3}";
  for (const json& extra : {json{{"grammar", gbnf}}, json{{"guided_grammar", gbnf}},
                            json{{"structured_outputs", {{"grammar", gbnf}}}}}) {
    const json a = post_ok(s, "/v1/chat/completions", chat_body(extra));
    EXPECT_TRUE(python_fullmatch(same, text_of(a))) << text_of(a);
  }
}

TEST(StructuredOutput, StreamingAndSeveralChoices) {
  LiveServer s;
  json body = completion_body(
      {{"guided_json", kPersonSchema}, {"n", 3}, {"temperature", 1.0}, {"seed", 7}, {"stream", true}});
  auto res = s.post("/v1/completions", body);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  const SseStream stream = parse_sse(res->body);
  ASSERT_TRUE(stream.done && stream.well_formed);
  std::vector<std::string> texts(3);
  std::vector<std::string> finish(3);
  for (const json& chunk : stream.chunks) {
    for (const json& c : chunk["choices"]) {
      const size_t i = c["index"];
      texts[i] += c["text"].get<std::string>();
      if (!c["finish_reason"].is_null()) finish[i] = c["finish_reason"];
    }
  }
  for (const std::string& f : finish) EXPECT_EQ(f, "stop");
  const json failures =
      invalid_instances(json::array({{{"name", "person"}, {"schema", kPersonSchema}, {"instances", texts}}}));
  EXPECT_TRUE(failures.empty()) << failures.dump(1);
}

TEST(StructuredOutput, MaxTokensFirstIsLengthWithPartialText) {
  LiveServer s;
  const json a =
      post_ok(s, "/v1/completions", completion_body({{"guided_json", kPersonSchema}, {"max_tokens", 3}}));
  EXPECT_EQ(a["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(a["usage"]["completion_tokens"], 3);
  EXPECT_EQ(text_of(a).substr(0, 1), "{");
}

void expect_400(const LiveServer& s, const std::string& path, const json& body, const std::string& param) {
  auto res = s.post(path, body);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << body.dump().substr(0, 300) << "\n" << res->body;
  const json j = json::parse(res->body);
  EXPECT_EQ(j["error"]["param"], param) << res->body;
}

TEST(StructuredOutput, BadInputIsA400NamingTheField) {
  LiveServer s;
  const std::string c = "/v1/completions", chat = "/v1/chat/completions";
  expect_400(s, c, completion_body({{"guided_json", {{"type", "integer"}, {"multipleOf", 2}}}}),
             "guided_json");
  expect_400(s, c, completion_body({{"guided_json", "{not json"}}), "guided_json");
  expect_400(s, c, completion_body({{"guided_regex", "(a"}}), "guided_regex");
  expect_400(s, c, completion_body({{"guided_regex", 5}}), "guided_regex");
  expect_400(s, c, completion_body({{"guided_choice", json::array()}}), "guided_choice");
  expect_400(s, c, completion_body({{"guided_choice", "a"}}), "guided_choice");
  expect_400(s, c, completion_body({{"grammar", "root ::= root \"x\" | \"y\""}}), "grammar");
  expect_400(s, c, completion_body({{"guided_grammar", "root ::= \"x"}}), "guided_grammar");
  expect_400(s, c,
             completion_body(
                 {{"json_schema", {{"type", "object"}, {"properties", {{"a", {{"not", json::object()}}}}}}}}),
             "json_schema");
  expect_400(s, chat, chat_body({{"response_format", {{"type", "xml"}}}}), "response_format");
  expect_400(s, chat, chat_body({{"response_format", {{"type", "json_schema"}}}}),
             "response_format.json_schema");
  expect_400(s, chat,
             chat_body({{"response_format",
                         {{"type", "json_schema"}, {"json_schema", {{"schema", {{"$ref", "#/nope"}}}}}}}}),
             "response_format");
  expect_400(s, c, completion_body({{"guided_regex", "a"}, {"guided_choice", {"a"}}}), "guided_choice");
  expect_400(s, c, completion_body({{"structured_outputs", json::object()}}), "structured_outputs");
  expect_400(s, c, completion_body({{"structured_outputs", {{"regex", "a"}, {"choice", {"b"}}}}}),
             "structured_outputs");
  // The error message says what is wrong.
  auto res = s.post(c, completion_body({{"guided_json", {{"type", "integer"}, {"multipleOf", 2}}}}));
  EXPECT_NE(res->body.find("multipleOf"), std::string::npos) << res->body;
}

// Hostile constraints are refused on the request's own thread; a generation running meanwhile
// is not held up and completes normally.
TEST(StructuredOutput, HostileInputIsRefusedWithoutStallingOthers) {
  LiveServer s;
  std::string streamed;
  std::thread running([&] {
    auto res = s.post("/v1/completions", completion_body({{"max_tokens", 150}, {"ignore_eos", true}}));
    if (res) streamed = res->body;
  });
  json deep = {{"type", "integer"}};
  for (int i = 0; i < 30; ++i) deep = {{"type", "array"}, {"items", deep}, {"maxItems", 1}, {"minItems", 1}};
  json many = {{"type", "object"}, {"properties", json::object()}};
  for (int i = 0; i < 6000; ++i) many["properties"]["p" + std::to_string(i)] = {{"type", "string"}};
  const std::vector<json> hostile = {
      {{"guided_json", many}},
      {{"guided_regex", "((((a{100}){100}){100}){100})"}},
      {{"grammar", "root ::= ([^\\x00]{9000}){60}"}},
      {{"grammar", "root ::= " + std::string(5000, '(') + "\"a\"" + std::string(5000, ')')}},
      {{"guided_choice", std::vector<std::string>(20000, "x")}},
  };
  for (const json& h : hostile) {
    auto res = s.post("/v1/completions", completion_body(h));
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << res->body.substr(0, 300);
  }
  // A deeply nested but legitimate schema compiles and works.
  const json a = post_ok(s, "/v1/completions", completion_body({{"guided_json", deep}, {"max_tokens", 400}}));
  running.join();
  ASSERT_FALSE(streamed.empty());
  EXPECT_EQ(json::parse(streamed)["usage"]["completion_tokens"], 150);
}

}  // namespace
}  // namespace strata::test
