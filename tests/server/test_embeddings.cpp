// POST /v1/embeddings over real HTTP (stories260K): input forms, encodings, errors, the gate.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "common/fixtures.h"
#include "quant/quantize.h"
#include "server/base64.h"
#include "server_fixture.h"

namespace strata::test {
namespace {

using nlohmann::json;

server::ServerOptions with_embeddings(int32_t normalize = 2, Pooling pooling = Pooling::None) {
  server::ServerOptions o;
  o.embeddings = true;
  o.embd_normalize = normalize;
  o.pooling = pooling;
  return o;
}

json embed_ok(const LiveServer& s, const json& body) {
  auto res = s.post("/v1/embeddings", body);
  EXPECT_TRUE(res);
  if (!res) return json();
  EXPECT_EQ(res->status, 200) << res->body;
  return json::parse(res->body);
}

std::vector<float> floats(const json& v) {
  std::vector<float> out;
  for (const json& x : v) out.push_back(x.get<float>());
  return out;
}

// RFC 4648 decoding, written here from the RFC (independent of the server's encoder).
std::vector<uint8_t> base64_decode(const std::string& s) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::vector<uint8_t> out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    if (c == '=') break;
    const int v = value(c);
    EXPECT_GE(v, 0) << c;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>((acc >> bits) & 0xff));
    }
  }
  return out;
}

void expect_error(const httplib::Result& res, int status, const std::string& param = "") {
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, status) << res->body;
  const json j = json::parse(res->body);
  ASSERT_TRUE(j.contains("error")) << res->body;
  EXPECT_TRUE(j["error"]["message"].is_string());
  if (!param.empty()) {
    EXPECT_EQ(j["error"]["param"], param) << res->body;
  }
}

TEST(Base64, Rfc4648TestVectors) {
  const std::pair<const char*, const char*> cases[] = {{"", ""},
                                                       {"f", "Zg=="},
                                                       {"fo", "Zm8="},
                                                       {"foo", "Zm9v"},
                                                       {"foob", "Zm9vYg=="},
                                                       {"fooba", "Zm9vYmE="},
                                                       {"foobar", "Zm9vYmFy"}};
  for (const auto& [in, out] : cases)
    EXPECT_EQ(server::base64_encode(reinterpret_cast<const uint8_t*>(in), std::strlen(in)), out) << in;
}

// Like llama-server, the route answers 501 unless the server runs with --embeddings.
TEST(Embeddings, RouteNeedsTheEmbeddingsFlag) {
  LiveServer s;
  auto res = s.post("/v1/embeddings", {{"input", "hello"}});
  expect_error(res, 501);
  EXPECT_EQ(json::parse(res->body)["error"]["type"], "not_supported_error");
}

TEST(Embeddings, InputFormsGiveTheSameVectorsAsSingleRequests) {
  LiveServer s(with_embeddings());
  const std::vector<std::string> texts = {"Once upon a time", "The cat sat", "Lily and Ben went to the park"};
  const int64_t n_embd = s.engine().model().config().n_embd;
  std::vector<std::vector<float>> single;
  std::vector<std::vector<int32_t>> tokens;
  int64_t total_tokens = 0;
  for (const std::string& t : texts) {
    const json j = embed_ok(s, {{"input", t}, {"model", "stories"}});
    EXPECT_EQ(j["object"], "list");
    EXPECT_EQ(j["model"], "stories");
    ASSERT_EQ(j["data"].size(), 1u);
    EXPECT_EQ(j["data"][0]["object"], "embedding");
    EXPECT_EQ(j["data"][0]["index"], 0);
    single.push_back(floats(j["data"][0]["embedding"]));
    ASSERT_EQ(static_cast<int64_t>(single.back().size()), n_embd);
    double norm = 0.0;
    for (float x : single.back()) norm += double{x} * x;
    EXPECT_NEAR(std::sqrt(norm), 1.0, 1e-5);  // L2-normalized by default
    tokens.push_back(stories_tokenizer().encode(t, true, true));
    EXPECT_EQ(j["usage"]["prompt_tokens"], tokens.back().size());
    EXPECT_EQ(j["usage"]["total_tokens"], tokens.back().size());
    total_tokens += static_cast<int64_t>(tokens.back().size());
  }
  // A list of strings, a token array, a list of token arrays.
  const json batch = embed_ok(s, {{"input", texts}});
  ASSERT_EQ(batch["data"].size(), texts.size());
  EXPECT_EQ(batch["usage"]["prompt_tokens"], total_tokens);
  const json ids = embed_ok(s, {{"input", tokens[1]}});
  const json id_lists = embed_ok(s, {{"input", tokens}});
  ASSERT_EQ(id_lists["data"].size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(batch["data"][i]["index"], i);
    const auto b = floats(batch["data"][i]["embedding"]);
    const auto l = floats(id_lists["data"][i]["embedding"]);
    for (size_t k = 0; k < single[i].size(); ++k) {
      EXPECT_NEAR(b[k], single[i][k], 1e-6) << i;
      EXPECT_NEAR(l[k], single[i][k], 1e-6) << i;
    }
  }
  const auto one = floats(ids["data"][0]["embedding"]);
  for (size_t k = 0; k < one.size(); ++k) EXPECT_NEAR(one[k], single[1][k], 1e-6);
}

TEST(Embeddings, Base64IsLittleEndianFloat32OfTheFloats) {
  LiveServer s(with_embeddings());
  const json f = embed_ok(s, {{"input", {"Once upon a time", "a dog"}}, {"encoding_format", "float"}});
  const json b = embed_ok(s, {{"input", {"Once upon a time", "a dog"}}, {"encoding_format", "base64"}});
  for (size_t i = 0; i < 2; ++i) {
    const auto expect = floats(f["data"][i]["embedding"]);
    const std::vector<uint8_t> bytes = base64_decode(b["data"][i]["embedding"].get<std::string>());
    ASSERT_EQ(bytes.size(), expect.size() * 4);
    for (size_t k = 0; k < expect.size(); ++k) {
      const uint32_t bits = uint32_t{bytes[4 * k]} | uint32_t{bytes[4 * k + 1]} << 8 |
                            uint32_t{bytes[4 * k + 2]} << 16 | uint32_t{bytes[4 * k + 3]} << 24;
      float v;
      std::memcpy(&v, &bits, 4);
      EXPECT_EQ(v, expect[k]) << k;  // the float text reads back exactly
    }
  }
}

// --embd-normalize -1 and --pooling last: W_out . embedding is llama.cpp's last-position logits.
TEST(Embeddings, UnnormalizedLastPoolingProjectsToLlamaCppLogits) {
  LiveServer s(with_embeddings(-1, Pooling::Last));
  const Model& m = s.engine().model();
  const TensorInfo* t = m.file().find_tensor("output.weight");
  if (!t) t = m.file().find_tensor("token_embd.weight");
  ASSERT_NE(t, nullptr);
  const int64_t n_embd = t->ne[0], n_vocab = t->n_elements() / n_embd;
  std::vector<float> w(static_cast<size_t>(t->n_elements()));
  for (int64_t r = 0; r < n_vocab; ++r)
    dequantize_row(t->type, static_cast<const uint8_t*>(t->data) + r * row_bytes(t->type, n_embd),
                   w.data() + r * n_embd, n_embd);
  std::ifstream in(shared_path("reference/stories260K.jsonl"));
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    const json ref = json::parse(line);
    const auto e = floats(embed_ok(s, {{"input", ref["tokens"]}})["data"][0]["embedding"]);
    const auto& last = ref["logits"].back();
    double num = 0.0, den = 0.0;
    for (int64_t v = 0; v < n_vocab; ++v) {
      double l = 0.0;
      for (int64_t i = 0; i < n_embd; ++i)
        l += double{w[static_cast<size_t>(v * n_embd + i)]} * e[static_cast<size_t>(i)];
      const double r = last[static_cast<size_t>(v)].get<double>();
      num += (l - r) * (l - r);
      den += r * r;
    }
    EXPECT_LE(std::sqrt(num / den), 2e-3);
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(Embeddings, BadRequestsGetOpenAiErrors) {
  LiveServer s(with_embeddings());
  const int64_t n_embd = s.engine().model().config().n_embd;
  expect_error(s.post("/v1/embeddings", json::object()), 400, "input");
  expect_error(s.post("/v1/embeddings", {{"input", ""}}), 400, "input");
  expect_error(s.post("/v1/embeddings", {{"input", json::array()}}), 400, "input");
  expect_error(s.post("/v1/embeddings", {{"input", {"a", ""}}}), 400, "input");
  expect_error(s.post("/v1/embeddings", {{"input", 42}}), 400, "input");
  expect_error(s.post("/v1/embeddings", {{"input", {{"a", "b"}}}}), 400);
  expect_error(s.post("/v1/embeddings", {{"input", json::parse(R"(["a", [1, 2]])")}}), 400, "input");
  expect_error(s.post("/v1/embeddings", {{"input", json::parse("[[]]")}}), 400, "input");
  expect_error(s.post("/v1/embeddings", {{"input", {1, 99999}}}), 400);
  const auto too_long = static_cast<size_t>(s.engine().capacity_tokens() + 1);  // beyond the context
  expect_error(s.post("/v1/embeddings", {{"input", std::vector<int32_t>(too_long, 5)}}), 400, "input");
  expect_error(s.post("/v1/embeddings", {{"input", "x"}, {"encoding_format", "int8"}}), 400,
               "encoding_format");
  expect_error(s.post("/v1/embeddings", {{"input", "x"}, {"dimensions", n_embd / 2}}), 400, "dimensions");
  expect_error(s.post("/v1/embeddings", {{"input", "x"}, {"dimensions", "64"}}), 400, "dimensions");
  expect_error(s.post("/v1/embeddings", {{"input", "x"}, {"model", "other"}}), 404);
  httplib::Client c = s.client();
  expect_error(c.Post("/v1/embeddings", "{\"input\": ", "application/json"), 400);
  // dimensions equal to the model's size is accepted; the server still serves.
  EXPECT_EQ(embed_ok(s, {{"input", "x"}, {"dimensions", n_embd}})["data"][0]["embedding"].size(),
            static_cast<size_t>(n_embd));
}

}  // namespace
}  // namespace strata::test
