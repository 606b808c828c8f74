// The server over real HTTP on a loopback port, with the real engine on stories260K.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <regex>
#include <sstream>
#include <thread>

#include "server_fixture.h"

namespace strata::test {
namespace {

using nlohmann::json;

void expect_openai_error(const httplib::Result& res, int status) {
  ASSERT_TRUE(res) << "no response";
  EXPECT_EQ(res->status, status) << res->body;
  const json j = json::parse(res->body);
  ASSERT_TRUE(j.contains("error")) << res->body;
  for (const char* key : {"message", "type", "param", "code"}) EXPECT_TRUE(j["error"].contains(key)) << key;
  EXPECT_TRUE(j["error"]["message"].is_string());
  // Nothing internal leaks: no file paths, no pointers.
  const std::string msg = j["error"]["message"];
  EXPECT_EQ(msg.find("/work"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(".cpp"), std::string::npos) << msg;
  EXPECT_FALSE(std::regex_search(msg, std::regex("0x[0-9a-f]{6,}"))) << msg;
}

json completion(const LiveServer& s, const json& body) {
  auto res = s.post("/v1/completions", body);
  EXPECT_TRUE(res);
  if (!res) return json();
  EXPECT_EQ(res->status, 200) << res->body;
  return json::parse(res->body);
}

// A connection the test controls byte by byte (to disconnect, or to stop reading).
class RawConnection {
 public:
  explicit RawConnection(int port, int rcvbuf = 0) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    if (rcvbuf > 0) setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawConnection() { close(); }
  bool ok() const { return ok_; }
  void post(const std::string& path, const std::string& body) {
    const std::string req = "POST " + path +
                            " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
                            "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    ASSERT_EQ(send(fd_, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  }
  // Reads until `needle` has been seen (or the peer closes); returns what was read.
  std::string read_until(const std::string& needle) {
    std::string got;
    char buf[4096];
    while (got.find(needle) == std::string::npos) {
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    return got;
  }
  // Ends the sending side only (a FIN): the connection still receives.
  void shutdown_sending() { ::shutdown(fd_, SHUT_WR); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  bool ok_ = false;
};

// Polls `pred` until it holds, for up to `seconds`: a bound on waiting for something that must
// happen, generous enough for a loaded or sanitized build.
template <typename Pred>
bool eventually(Pred pred, double seconds = 120.0) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

TEST(HttpServer, HealthIs503WhileLoadingThen200) {
  LiveServer s({}, {}, /*attach=*/false);
  expect_openai_error(s.client().Get("/health"), 503);
  expect_openai_error(s.client().Get("/v1/models"), 503);
  expect_openai_error(s.post("/v1/completions", {{"prompt", "x"}}), 503);
  s.attach();
  auto res = s.client().Get("/health");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST(HttpServer, HealthReportsAnEngineStepRunningTooLong) {
  server::ServerOptions o;
  o.engine_stall_timeout = std::chrono::milliseconds(0);  // any step in progress counts as stuck
  LiveServer s(o);
  EXPECT_EQ(s.client().Get("/health")->status, 200);  // idle: no step running
  // Generations keep the loop inside a step most of the time, until a probe lands in one.
  std::atomic<bool> seen{false};
  std::thread load([&] {
    while (!seen)
      s.post("/v1/completions",
             {{"prompt", "Once upon a time"}, {"max_tokens", 200}, {"n", 4}, {"ignore_eos", true}});
  });
  std::string body;
  EXPECT_TRUE(eventually([&] {
    auto res = s.client().Get("/health");
    body = res ? res->body : "";
    return res && res->status == 503;
  }));
  seen = true;
  EXPECT_NE(body.find("not responding"), std::string::npos) << body;
  load.join();
  EXPECT_TRUE(eventually([&] { return s.client().Get("/health")->status == 200; }));
}

TEST(HttpServer, APortInUseIsAnError) {
  LiveServer s;
  server::ServerOptions o;
  o.port = s.port();
  server::Server second(o);
  EXPECT_THROW(second.start(), Error);  // no silent sharing of the port (SO_REUSEPORT)
}

TEST(HttpServer, GreedyCompletionsMatchLlamaCpp) {
  LiveServer s;
  const auto refs = stories_references();
  for (size_t i = 0; i < 3; ++i) {
    const json j = completion(s, {{"prompt", refs[i].prompt}, {"max_tokens", 64}, {"temperature", 0}});
    ASSERT_EQ(j["choices"].size(), 1u);
    EXPECT_EQ(j["choices"][0]["text"], refs[i].greedy_text) << refs[i].prompt;
    EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(j["usage"]["prompt_tokens"], refs[i].tokens.size());
    EXPECT_EQ(j["usage"]["completion_tokens"], 64);
    EXPECT_EQ(j["usage"]["total_tokens"], refs[i].tokens.size() + 64);
    EXPECT_EQ(j["model"], "stories");
  }
}

TEST(HttpServer, StreamingGivesTheSameTextInChunks) {
  LiveServer s;
  const GreedyReference ref = stories_references()[0];
  auto res = s.post("/v1/completions", {{"prompt", ref.prompt},
                                        {"max_tokens", 64},
                                        {"temperature", 0},
                                        {"stream", true},
                                        {"stream_options", {{"include_usage", true}}}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream");
  const SseStream sse = parse_sse(res->body);
  EXPECT_TRUE(sse.well_formed);
  EXPECT_TRUE(sse.done);
  ASSERT_GE(sse.chunks.size(), 2u);
  std::string text;
  for (size_t i = 0; i + 1 < sse.chunks.size(); ++i) {
    const json& c = sse.chunks[i];
    EXPECT_EQ(c["object"], "text_completion");
    EXPECT_EQ(c["id"], sse.chunks[0]["id"]);
    EXPECT_TRUE(c.contains("usage") && c["usage"].is_null());
    text += c["choices"][0]["text"].get<std::string>();
    EXPECT_EQ(c["choices"][0]["finish_reason"].is_null(), i + 2 < sse.chunks.size());
  }
  EXPECT_EQ(text, ref.greedy_text);
  const json& usage_chunk = sse.chunks.back();
  EXPECT_EQ(usage_chunk["choices"], json::array());
  EXPECT_EQ(usage_chunk["usage"]["completion_tokens"], 64);
  EXPECT_EQ(usage_chunk["usage"]["prompt_tokens"], ref.tokens.size());
}

TEST(HttpServer, StopStringsAcrossTokensAreCutAndNotEmitted) {
  LiveServer s;
  const GreedyReference ref = stories_references()[0];  // ", there was a little girl named Lily. ..."
  for (const std::string stop : {"little girl", "Lily", "e was"}) {
    const json j =
        completion(s, {{"prompt", ref.prompt}, {"max_tokens", 64}, {"temperature", 0}, {"stop", stop}});
    EXPECT_EQ(j["choices"][0]["text"], ref.greedy_text.substr(0, ref.greedy_text.find(stop))) << stop;
    EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
    auto res = s.post(
        "/v1/completions",
        {{"prompt", ref.prompt}, {"max_tokens", 64}, {"temperature", 0}, {"stop", {stop}}, {"stream", true}});
    std::string text;
    for (const json& c : parse_sse(res->body).chunks) text += c["choices"][0]["text"].get<std::string>();
    EXPECT_EQ(text, ref.greedy_text.substr(0, ref.greedy_text.find(stop))) << stop;
  }
}

TEST(HttpServer, SeededSamplingIsReproducibleAndNGivesChoices) {
  LiveServer s;
  const json body = {
      {"prompt", "Once upon a time"}, {"max_tokens", 24}, {"temperature", 1.0}, {"seed", 1234}, {"n", 3}};
  const json a = completion(s, body), b = completion(s, body);
  ASSERT_EQ(a["choices"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(a["choices"][i]["index"], i);
    EXPECT_EQ(a["choices"][i]["text"], b["choices"][i]["text"]);
  }
  EXPECT_EQ(a["usage"]["prompt_tokens"], 5);  // the prompt is counted once
  // Batched prompts: n choices per prompt, numbered prompt * n + choice.
  const json batch = completion(
      s,
      {{"prompt", {"Once upon a time", "The little dog"}}, {"max_tokens", 64}, {"temperature", 0}, {"n", 2}});
  ASSERT_EQ(batch["choices"].size(), 4u);
  const auto refs = stories_references();
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(batch["choices"][i]["text"], refs[static_cast<size_t>(i / 2)].greedy_text);
}

TEST(HttpServer, ChatCompletionAndStream) {
  LiveServer s;
  const json messages = json::array({{{"role", "user"}, {"content", "Tell me a story."}}});
  auto tok = s.post("/tokenize", {{"messages", messages}});
  ASSERT_TRUE(tok && tok->status == 200);
  const int64_t prompt_tokens = json::parse(tok->body)["count"];
  auto res = s.post("/v1/chat/completions", {{"messages", messages}, {"max_tokens", 12}, {"temperature", 0}});
  ASSERT_TRUE(res && res->status == 200) << (res ? res->body : "");
  const json j = json::parse(res->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["usage"]["prompt_tokens"], prompt_tokens);
  auto st = s.post("/v1/chat/completions",
                   {{"messages", messages}, {"max_tokens", 12}, {"temperature", 0}, {"stream", true}});
  const SseStream sse = parse_sse(st->body);
  ASSERT_TRUE(sse.done && sse.well_formed);
  EXPECT_EQ(sse.chunks[0]["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  for (const json& c : sse.chunks) {
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    if (c["choices"][0]["delta"].contains("content"))
      text += c["choices"][0]["delta"]["content"].get<std::string>();
  }
  EXPECT_EQ(text, j["choices"][0]["message"]["content"]);
  EXPECT_EQ(sse.chunks.back()["choices"][0]["finish_reason"], j["choices"][0]["finish_reason"]);
}

TEST(HttpServer, ErrorsAreOpenAiShaped) {
  server::ServerOptions o;
  o.max_body_bytes = 1024;
  LiveServer s(o);
  httplib::Client c = s.client();
  expect_openai_error(c.Post("/v1/completions", "{\"prompt\": ", "application/json"), 400);
  expect_openai_error(c.Post("/v1/completions", "[1]", "application/json"), 400);
  expect_openai_error(s.post("/v1/completions", {{"prompt", "x"}, {"temperature", -1}}), 400);
  expect_openai_error(s.post("/v1/chat/completions", {{"messages", json::array()}}), 400);
  expect_openai_error(s.post("/v1/completions", {{"prompt", "x"}, {"model", "nope"}}), 404);
  expect_openai_error(c.Get("/v2/nothing"), 404);
  expect_openai_error(c.Get("/v1/models/nope"), 404);
  expect_openai_error(c.Post("/v1/completions", std::string(2048, ' ') + "{}", "application/json"), 413);
  const json bad = json::parse(s.post("/v1/completions", {{"prompt", "x"}, {"top_p", 2}})->body);
  EXPECT_EQ(bad["error"]["param"], "top_p");
  EXPECT_EQ(bad["error"]["type"], "invalid_request_error");
  // Still serving after all that.
  EXPECT_EQ(completion(s, {{"prompt", "x"}, {"max_tokens", 2}})["choices"].size(), 1u);
}

TEST(HttpServer, ApiKeyGuardsEveryRouteButHealth) {
  server::ServerOptions o;
  o.api_key = "sk-test-123";
  LiveServer s(o);
  httplib::Client anonymous("127.0.0.1", s.port());
  expect_openai_error(anonymous.Get("/v1/models"), 401);
  expect_openai_error(anonymous.Get("/metrics"), 401);
  expect_openai_error(anonymous.Post("/v1/completions", "{\"prompt\": \"x\"}", "application/json"), 401);
  expect_openai_error(anonymous.Post("/tokenize", "{\"prompt\": \"x\"}", "application/json"), 401);
  expect_openai_error(s.client("sk-test-124").Get("/v1/models"), 401);
  EXPECT_EQ(json::parse(anonymous.Get("/v1/completions")->body)["error"]["code"], "invalid_api_key");
  auto health = anonymous.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto models = s.client().Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 200);
  const json m = json::parse(models->body);
  EXPECT_EQ(m["object"], "list");
  EXPECT_EQ(m["data"][0]["id"], "stories");
  EXPECT_EQ(s.client().Get("/v1/models/stories")->status, 200);
}

TEST(HttpServer, FullQueueAnswers429WithRetryAfter) {
  EngineConfig cfg;
  cfg.max_queue = 0;  // every request finds the queue full
  LiveServer s({}, cfg);
  auto res = s.post("/v1/completions", {{"prompt", "x"}});
  expect_openai_error(res, 429);
  EXPECT_EQ(res->get_header_value("Retry-After"), "1");
}

TEST(HttpServer, DrainingRefusesNewWork) {
  LiveServer s;
  s.server().begin_drain();
  expect_openai_error(s.post("/v1/completions", {{"prompt", "x"}}), 503);
  expect_openai_error(s.client().Get("/health"), 503);
}

TEST(HttpServer, MetricsArePrometheusText) {
  LiveServer s;
  completion(s,
             {{"prompt", "Once upon a time"}, {"max_tokens", 10}, {"temperature", 0}, {"ignore_eos", true}});
  auto res = s.client().Get("/metrics");
  ASSERT_TRUE(res && res->status == 200);
  EXPECT_EQ(res->get_header_value("Content-Type").rfind("text/plain", 0), 0u);
  // Every line: a HELP/TYPE comment or `name{labels} value` with a number.
  const std::regex sample("^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{(le|position)=\"([^\"]+)\"\\})? (\\S+)$");
  const std::regex comment(R"(^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+$)");
  std::map<std::string, std::string> types;
  std::map<std::string, double> values;
  std::istringstream in(res->body);
  std::string line;
  double last_bucket = -1;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, comment)) {
      if (m[1] == "TYPE") {
        const std::string rest = line.substr(7);
        types[rest.substr(0, rest.find(' '))] = rest.substr(rest.find(' ') + 1);
        last_bucket = -1;
      }
      continue;
    }
    ASSERT_TRUE(std::regex_match(line, m, sample)) << line;
    const double v = m[5] == "+Inf" ? INFINITY : std::stod(m[5]);
    if (m[3] == "le") {  // histogram buckets are cumulative
      EXPECT_GE(v, last_bucket) << line;
      last_bucket = v;
      if (m[4] == "+Inf") values[m[1].str() + "{+Inf}"] = v;
    } else if (m[3] == "position") {
      EXPECT_GE(v, 0.0) << line;
      values[m[1].str() + "{" + m[4].str() + "}"] = v;
    } else {
      values[m[1]] = v;
    }
  }
  for (const char* h : {"strata:time_to_first_token_seconds", "strata:inter_token_latency_seconds",
                        "strata:e2e_request_latency_seconds", "strata:request_queue_time_seconds"}) {
    EXPECT_EQ(types[h], "histogram") << h;
    EXPECT_EQ(values[std::string(h) + "_bucket{+Inf}"], values[std::string(h) + "_count"]) << h;
  }
  for (const char* g :
       {"strata:num_requests_running", "strata:num_requests_waiting", "strata:kv_cache_usage_perc"})
    EXPECT_EQ(types[g], "gauge") << g;
  for (const char* c :
       {"strata:prompt_tokens_total", "strata:generation_tokens_total", "strata:num_preemptions_total",
        "strata:prefix_cache_queries_total", "strata:prefix_cache_hits_total"})
    EXPECT_EQ(types[c], "counter") << c;
  // One request of 5 prompt tokens and 10 generated ones.
  EXPECT_EQ(values["strata:generation_tokens_total"], 10);
  EXPECT_EQ(values["strata:prompt_tokens_total"], 5);
  EXPECT_EQ(values["strata:e2e_request_latency_seconds_count"], 1);
  EXPECT_EQ(values["strata:inter_token_latency_seconds_count"], 9);
}

TEST(HttpServer, TokenizeAndDetokenize) {
  LiveServer s;
  for (const auto& ref : stories_references()) {
    auto res = s.post("/tokenize", {{"prompt", ref.prompt}});
    ASSERT_TRUE(res && res->status == 200);
    const json j = json::parse(res->body);
    EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), ref.tokens);
    EXPECT_EQ(j["count"], ref.tokens.size());
    auto back = s.post("/detokenize", {{"tokens", ref.tokens}});
    ASSERT_TRUE(back && back->status == 200);
    EXPECT_EQ(json::parse(back->body)["prompt"], ref.prompt);
  }
  auto no_bos = s.post("/tokenize", {{"prompt", "Once upon a time"}, {"add_special_tokens", false}});
  EXPECT_EQ(json::parse(no_bos->body)["tokens"], json::parse("[403, 407, 261, 378]"));
  expect_openai_error(s.post("/detokenize", {{"tokens", {1, 512}}}), 400);
  expect_openai_error(s.post("/tokenize", {{"prompt", 5}}), 400);
}

// A streaming request of 4 x 490 tokens (more than the tests let it generate), started on conn
// and read up to its first event.
constexpr int kLongStreamTokens = 4 * 490;
void start_long_stream(RawConnection& conn) {
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 490}, {"n", 4},
                     {"ignore_eos", true},           {"temperature", 0},  {"stream", true}};
  conn.post("/v1/completions", body.dump());
  EXPECT_NE(conn.read_until("data: ").find("200 OK"), std::string::npos);
}

TEST(HttpServer, DisconnectedStreamIsAbortedAndFreesItsBlocks) {
  LiveServer s;
  RawConnection conn(s.port());
  ASSERT_TRUE(conn.ok());
  start_long_stream(conn);
  conn.close();
  ASSERT_TRUE(eventually([&] { return s.metric("strata:request_aborted_total") == 1; }));
  EXPECT_LT(s.metric("strata:generation_tokens_total"), kLongStreamTokens);  // stopped early
  ASSERT_TRUE(eventually([&] {
    auto st = s.client().Get("/debug/stats");
    return st && json::parse(st->body)["kv_blocks_used"] == 0 && json::parse(st->body)["running"] == 0;
  }));
  EXPECT_TRUE(eventually([&] { return s.server().in_flight() == 0; }));
}

// A client that closes its side while it still reads: every write succeeds, so only the read
// side shows that it left; the stream must stop at once, not run to its last token.
TEST(HttpServer, StreamWhoseClientClosedItsSideIsAbortedWhileWritesSucceed) {
  LiveServer s;
  RawConnection conn(s.port());
  ASSERT_TRUE(conn.ok());
  start_long_stream(conn);
  conn.shutdown_sending();
  const std::string rest = conn.read_until("data: [DONE]");  // until the server closes
  EXPECT_EQ(rest.find("data: [DONE]"), std::string::npos);
  ASSERT_TRUE(eventually([&] { return s.metric("strata:request_aborted_total") == 1; }));
  EXPECT_LT(s.metric("strata:generation_tokens_total"), kLongStreamTokens);
}

TEST(HttpServer, DisconnectedNonStreamingRequestIsAborted) {
  LiveServer s;
  RawConnection conn(s.port());
  ASSERT_TRUE(conn.ok());
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 490}, {"n", 4}, {"ignore_eos", true}};
  conn.post("/v1/completions", body.dump());
  ASSERT_TRUE(eventually([&] { return s.metric("strata:num_requests_running") > 0; }));
  conn.close();
  ASSERT_TRUE(eventually([&] { return s.metric("strata:request_aborted_total") == 1; }));
  EXPECT_LT(s.metric("strata:generation_tokens_total"), 4 * 490);
}

TEST(HttpServer, ClientThatStopsReadingDoesNotHoldUpOthers) {
  LiveServer s;
  RawConnection stalled(s.port(), /*rcvbuf=*/1024);
  ASSERT_TRUE(stalled.ok());
  const json slow = {{"prompt", "Once upon a time"},
                     {"max_tokens", 490},
                     {"ignore_eos", true},
                     {"stream", true},
                     {"logprobs", 5}};
  stalled.post("/v1/completions", slow.dump());  // and never reads the answer
  // Were the engine waiting for the stalled stream, these would never finish (it is never read
  // until the test ends).
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(
        completion(
            s, {{"prompt", "The little dog"}, {"max_tokens", 64}, {"temperature", 0}})["choices"][0]["text"],
        stories_references()[1].greedy_text);
  // The stalled stream was generated in full all the same: the engine never waited for it.
  EXPECT_TRUE(eventually([&] { return s.metric("strata:generation_tokens_total") >= 3 * 64 + 490; }));
}

}  // namespace
}  // namespace strata::test
