// Tool calling through the real server and engine on stories260K, with the chat templates of
// ../shared/templates given as --chat-template-file would: forced calls (tool_choice
// "required" and named) come back as OpenAI tool_calls whose arguments validate against the
// function's schema (python3-jsonschema), streaming and not; conversations with assistant
// tool_calls and tool results render through each template; bad tool fields are 400s.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/fixtures.h"
#include "server_fixture.h"

namespace strata::test {
namespace {

using nlohmann::json;

const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {
      "city": {"type": "string", "maxLength": 6},
      "unit": {"enum": ["c", "f"]}},
      "required": ["city", "unit"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "add", "description": "Adds two numbers",
    "parameters": {"type": "object", "properties": {
      "a": {"type": "integer", "minimum": -50, "maximum": 50},
      "b": {"type": "integer", "minimum": 0, "maximum": 9}},
      "required": ["a", "b"], "additionalProperties": false}}}
])");

std::string read_template(const std::string& name) {
  std::ifstream in(shared_path("templates/" + name));
  EXPECT_TRUE(in) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

server::ServerOptions with_template(const std::string& file) {
  server::ServerOptions o;
  o.chat_template_source = read_template(file);
  return o;
}

json tool_body(json extra) {
  json body = {{"messages", {{{"role", "user"}, {"content", "What is the weather in Paris?"}}}},
               {"tools", kTools},
               {"max_tokens", 200},
               {"seed", 7},
               {"temperature", 1.0}};
  body.update(extra);
  return body;
}

json schema_of(const std::string& name) {
  for (const json& t : kTools)
    if (t["function"]["name"] == name) return t["function"]["parameters"];
  return nullptr;
}

// Every call names a tool of kTools (or `only`) and its arguments validate against the tool's
// schema with python3-jsonschema.
void expect_valid_calls(const json& calls, const std::string& only = "") {
  ASSERT_TRUE(calls.is_array() && !calls.empty()) << calls.dump();
  json cases = json::array();
  for (const json& c : calls) {
    ASSERT_EQ(c["type"], "function") << c.dump();
    ASSERT_TRUE(c["id"].is_string() && !c["id"].get<std::string>().empty()) << c.dump();
    const std::string name = c["function"]["name"];
    if (!only.empty()) {
      EXPECT_EQ(name, only);
    }
    const json schema = schema_of(name);
    ASSERT_FALSE(schema.is_null()) << "unknown function " << name;
    cases.push_back({{"name", name}, {"schema", schema}, {"instances", {c["function"]["arguments"]}}});
  }
  const CommandResult r =
      run_command({"/usr/bin/python3", source_dir() + "/tests/grammar/validate_instances.py"}, cases.dump());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.empty() ? json::array() : json::parse(r.out), json::array()) << calls.dump();
}

// The message of a streamed answer rebuilt from its deltas (OpenAI's accumulation rules).
json accumulate(const SseStream& s, std::string& finish) {
  json message = {{"content", ""}, {"tool_calls", json::array()}};
  for (const json& chunk : s.chunks) {
    if (chunk["choices"].empty()) continue;
    const json& choice = chunk["choices"][0];
    if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
    const json& d = choice["delta"];
    if (d.contains("content") && d["content"].is_string())
      message["content"] = message["content"].get<std::string>() + d["content"].get<std::string>();
    if (!d.contains("tool_calls")) continue;
    for (const json& tc : d["tool_calls"]) {
      const size_t i = tc["index"];
      json& calls = message["tool_calls"];
      if (i == calls.size()) {
        EXPECT_TRUE(tc.contains("id")) << "the first delta of a call carries its id";
        calls.push_back({{"id", tc["id"]},
                         {"type", tc["type"]},
                         {"function", {{"name", tc["function"]["name"]}, {"arguments", ""}}}});
      }
      EXPECT_LT(i, calls.size()) << "delta for a call that never started";
      if (i >= calls.size()) continue;
      if (tc["function"].contains("arguments"))
        calls[i]["function"]["arguments"] = calls[i]["function"]["arguments"].get<std::string>() +
                                            tc["function"]["arguments"].get<std::string>();
    }
  }
  return message;
}

const std::vector<std::string> kTemplates = {
    "Qwen-Qwen2.5-7B-Instruct.jinja",              // Hermes <tool_call>
    "meta-llama-Llama-3.1-8B-Instruct.jinja",      // Llama 3 JSON with "parameters"
    "mistralai-Mistral-Nemo-Instruct-2407.jinja",  // [TOOL_CALLS] list
    "google-gemma-2-2b-it.jinja",                  // no tools in the template: generic
};

TEST(ToolCalling, RequiredCallsValidateInEveryFamily) {
  for (const std::string& file : kTemplates) {
    SCOPED_TRACE(file);
    LiveServer s(with_template(file));
    auto res = s.post("/v1/chat/completions",
                      tool_body({{"tool_choice", "required"}, {"parallel_tool_calls", false}}));
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json a = json::parse(res->body);
    const json& choice = a["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "tool_calls") << res->body;
    EXPECT_TRUE(choice["message"]["content"].is_null()) << res->body;
    expect_valid_calls(choice["message"]["tool_calls"]);
    EXPECT_EQ(choice["message"]["tool_calls"].size(), 1u);
    if (file.find("Mistral") != std::string::npos) {  // its template insists on 9-character ids
      EXPECT_EQ(choice["message"]["tool_calls"][0]["id"].get<std::string>().size(), 9u);
    }
  }
}

TEST(ToolCalling, NamedFunctionStreamsLikeTheWholeAnswer) {
  for (const std::string& file : kTemplates) {
    SCOPED_TRACE(file);
    LiveServer s(with_template(file));
    const json choice = {{"type", "function"}, {"function", {{"name", "add"}}}};
    auto whole = s.post("/v1/chat/completions", tool_body({{"tool_choice", choice}}));
    auto streamed = s.post("/v1/chat/completions", tool_body({{"tool_choice", choice}, {"stream", true}}));
    ASSERT_TRUE(whole && streamed);
    ASSERT_EQ(whole->status, 200) << whole->body;
    ASSERT_EQ(streamed->status, 200) << streamed->body;
    const json w = json::parse(whole->body)["choices"][0];
    expect_valid_calls(w["message"]["tool_calls"], "add");
    const SseStream sse = parse_sse(streamed->body);
    ASSERT_TRUE(sse.done && sse.well_formed);
    std::string finish;
    const json m = accumulate(sse, finish);
    EXPECT_EQ(finish, "tool_calls");
    EXPECT_EQ(m["content"], "");
    expect_valid_calls(m["tool_calls"], "add");
    // Same seed, same sampling: the streamed calls are the whole answer's, ids aside.
    ASSERT_EQ(m["tool_calls"].size(), w["message"]["tool_calls"].size());
    for (size_t i = 0; i < m["tool_calls"].size(); ++i)
      EXPECT_EQ(m["tool_calls"][i]["function"], w["message"]["tool_calls"][i]["function"]);
  }
}

TEST(ToolCalling, ParallelCallsAreSeparateCalls) {
  LiveServer s(with_template("Qwen-Qwen2.5-7B-Instruct.jinja"));
  int several = 0;
  for (int seed = 1; seed <= 6; ++seed) {
    auto res = s.post("/v1/chat/completions",
                      tool_body({{"tool_choice", "required"}, {"seed", seed}, {"max_tokens", 400}}));
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json choice = json::parse(res->body)["choices"][0];
    json calls = choice["message"]["tool_calls"];
    ASSERT_TRUE(calls.is_array()) << res->body;
    if (choice["finish_reason"] == "length")
      calls.erase(calls.size() - 1);  // the last one was cut off
    else
      EXPECT_EQ(choice["finish_reason"], "tool_calls");
    if (!calls.empty()) expect_valid_calls(calls);
    several += calls.size() > 1;
  }
  EXPECT_GT(several, 0) << "a random model given the choice should sometimes make more than one call";
}

TEST(ToolCalling, ConversationsWithToolResultsRender) {
  const json conversation = json::parse(R"([
    {"role": "user", "content": "What is 2 + 3?"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "abcDEF123", "type": "function",
      "function": {"name": "add", "arguments": "{\"a\": 2, \"b\": 3}"}}]},
    {"role": "tool", "tool_call_id": "abcDEF123", "content": "5"},
    {"role": "assistant", "content": "2 + 3 is 5."},
    {"role": "user", "content": "Thanks. And the weather?"}])");
  for (const std::string& file : kTemplates) {
    SCOPED_TRACE(file);
    LiveServer s(with_template(file));
    json body = tool_body({{"messages", conversation}, {"max_tokens", 4}});
    auto res = s.post("/v1/chat/completions", body);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;
    // /tokenize renders the same conversation (with tools) through the same path.
    auto tok = s.client().Post("/tokenize", json{{"messages", conversation}, {"tools", kTools}}.dump(),
                               "application/json");
    ASSERT_TRUE(tok);
    ASSERT_EQ(tok->status, 200) << tok->body;
  }
}

TEST(ToolCalling, AutoWithoutCallsIsPlainContent) {
  LiveServer s(with_template("Qwen-Qwen2.5-7B-Instruct.jinja"));
  auto res = s.post("/v1/chat/completions", tool_body({{"max_tokens", 20}}));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json choice = json::parse(res->body)["choices"][0];
  // stories260K knows nothing of <tool_call>: it writes a story.
  EXPECT_FALSE(choice["message"].contains("tool_calls")) << res->body;
  EXPECT_TRUE(choice["message"]["content"].is_string());
  EXPECT_NE(choice["finish_reason"], "tool_calls");
}

TEST(ToolCalling, BadToolFieldsAre400s) {
  LiveServer s(with_template("Qwen-Qwen2.5-7B-Instruct.jinja"));
  json many = json::array();
  for (int i = 0; i < 129; ++i)
    many.push_back(
        {{"type", "function"}, {"function", {{"name", std::string("f").append(std::to_string(i))}}}});
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"tools", "x"}}, "tools"},
      {{{"tools", many}}, "tools"},
      {{{"tools", {{{"type", "function"}, {"function", {{"name", "bad name"}}}}}}}, "tools[0].function.name"},
      {{{"tools", {{{"type", "code"}, {"function", {{"name", "f"}}}}}}}, "tools[0].type"},
      {{{"tool_choice", "sometimes"}}, "tool_choice"},
      {{{"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}},
       "tool_choice.function.name"},
      {{{"tool_choice", "required"}, {"tools", nullptr}}, "tool_choice"},
      {{{"tool_choice", "required"}, {"response_format", {{"type", "json_object"}}}}, "tool_choice"},
      {{{"tool_choice", "required"},
        {"tools",
         {{{"type", "function"},
           {"function", {{"name", "f"}, {"parameters", {{"type", "object"}, {"not", {}}}}}}}}}},
       "tools"},
  };
  for (const auto& [extra, param] : cases) {
    json body = tool_body(json::object());
    for (auto it = extra.begin(); it != extra.end(); ++it) {
      if (it.value().is_null())
        body.erase(it.key());
      else
        body[it.key()] = it.value();
    }
    auto res = s.post("/v1/chat/completions", body);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << extra.dump() << " -> " << res->body;
    if (res->status == 400) {
      EXPECT_EQ(json::parse(res->body)["error"]["param"], param) << res->body;
    }
  }
  EXPECT_EQ(s.client().Get("/health")->status, 200);
}

// A 10 MB tool list (128 tools with long descriptions and wide schemas) is refused with a 400
// in auto and forced mode alike (the rendered prompt is far beyond the context, which is checked
// before any grammar is compiled), and the server goes on serving.
TEST(ToolCalling, HugeToolListsAre400s) {
  LiveServer s(with_template("Qwen-Qwen2.5-7B-Instruct.jinja"));
  json tools = json::array();
  for (int i = 0; i < 128; ++i) {
    json props = json::object();
    for (int k = 0; k < 40; ++k)
      props[std::string("p").append(std::to_string(k))] = {{"type", "string"}, {"maxLength", 64}};
    tools.push_back({{"type", "function"},
                     {"function",
                      {{"name", std::string("tool").append(std::to_string(i))},
                       {"description", std::string(80000, 'x')},
                       {"parameters", {{"type", "object"}, {"properties", props}}}}}});
  }
  for (const char* choice : {"auto", "required"}) {
    auto res = s.post("/v1/chat/completions", tool_body({{"tools", tools}, {"tool_choice", choice}}));
    ASSERT_TRUE(res) << choice;
    EXPECT_EQ(res->status, 400) << choice << ": " << res->body.substr(0, 300);
  }
  EXPECT_EQ(s.client().Get("/health")->status, 200);
}

}  // namespace
}  // namespace strata::test
