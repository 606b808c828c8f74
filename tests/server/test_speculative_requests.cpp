// Speculative decoding through the HTTP server: the per-request "speculative" object (validated,
// unknown fields a 400), greedy text unchanged by it, llama-server's `timings.draft_n` counts in
// the answer, and vLLM's spec_decode counters on /metrics.
#include <gtest/gtest.h>

#include "server_fixture.h"

namespace strata {
namespace {

using nlohmann::json;
using test::LiveServer;

EngineConfig spec_engine() {
  EngineConfig c;
  c.kv_cache_bytes = 16 << 20;
  c.spec.methods = parse_spec_methods("ngram,self:q4_0");
  c.spec.adaptive = false;
  c.spec.draft_p_min = 0.0f;
  return c;
}

json body(const std::string& prompt, int max_tokens) {
  return {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}, {"ignore_eos", true}};
}

TEST(SpeculativeRequests, GreedyTextIsTheSameWithAndWithoutAndTimingsCountTheDrafts) {
  LiveServer s({}, spec_engine());
  json off = body("Once upon a time, there was a little girl.", 40);
  off["speculative"] = {{"enabled", false}};
  json on = body("Once upon a time, there was a little girl.", 40);
  on["speculative"] = {{"method", "self:q4_0"}, {"draft_max", 4}};
  auto a = s.post("/v1/completions", off), b = s.post("/v1/completions", on);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->status, 200) << a->body;
  ASSERT_EQ(b->status, 200) << b->body;
  const json ja = json::parse(a->body), jb = json::parse(b->body);
  EXPECT_EQ(ja["choices"][0]["text"], jb["choices"][0]["text"]);
  EXPECT_FALSE(ja.contains("timings"));
  ASSERT_TRUE(jb.contains("timings")) << jb.dump();
  const int64_t drafted = jb["timings"]["draft_n"], accepted = jb["timings"]["draft_n_accepted"];
  EXPECT_GT(drafted, 0);
  EXPECT_LE(accepted, drafted);
  EXPECT_EQ(s.metric("strata:spec_decode_num_draft_tokens_total"), static_cast<double>(drafted));
  EXPECT_EQ(s.metric("strata:spec_decode_num_accepted_tokens_total"), static_cast<double>(accepted));
}

TEST(SpeculativeRequests, BadOverridesAreA400NamingTheField) {
  LiveServer s({}, spec_engine());
  for (const json& spec :
       {json{{"colour", "red"}}, json{{"draft_max", 1000}}, json{{"method", "magic"}},
        json{{"method", "draft:/no/such/file.gguf"}}, json("ngram"), json{{"enabled", 3}}}) {
    json b = body("Once upon a time", 8);
    b["speculative"] = spec;
    auto r = s.post("/v1/completions", b);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << spec.dump() << " -> " << r->body;
    EXPECT_NE(r->body.find("speculative"), std::string::npos) << r->body;
  }
}

}  // namespace
}  // namespace strata
