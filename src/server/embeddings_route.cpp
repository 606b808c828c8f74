// POST /v1/embeddings: each input becomes an engine embedding request (batched with the others
// like any prompt); the pooled vectors are normalized (--embd-normalize) and answered as one
// OpenAI list. Served only when the server runs with --embeddings, as llama-server does.
#include <charconv>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/log.h"
#include "server/api_error.h"
#include "server/base64.h"
#include "server/connection_watch.h"
#include "server/embedding_request.h"
#include "server/generation.h"
#include "server/json_fields.h"
#include "server/server_context.h"

namespace strata::server {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(50);

void append_float(std::string& out, float v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back as v
  out.append(buf, r.ptr);
}

std::string encode_vector(const std::vector<float>& v, bool base64) {
  if (base64) {
    static_assert(sizeof(float) == 4);
    std::vector<uint8_t> bytes(v.size() * 4);
    std::memcpy(bytes.data(), v.data(), bytes.size());  // x86-64 and aarch64 are little-endian
    return nlohmann::json(base64_encode(bytes.data(), bytes.size())).dump();
  }
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    append_float(out, v[i]);
  }
  return out + "]";
}

std::string response_body(const std::vector<std::vector<float>>& vectors, bool base64,
                          const std::string& model, int64_t prompt_tokens) {
  std::string out = "{\"object\":\"list\",\"data\":[";
  for (size_t i = 0; i < vectors.size(); ++i) {
    if (i) out += ',';
    out += "{\"object\":\"embedding\",\"index\":" + std::to_string(i) +
           ",\"embedding\":" + encode_vector(vectors[i], base64) + "}";
  }
  out +=
      "],\"model\":" + nlohmann::json(model).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string n = std::to_string(prompt_tokens);
  return out + ",\"usage\":{\"prompt_tokens\":" + n + ",\"total_tokens\":" + n + "}}";
}

// Waits for every input's pooled vector (index = input order).
std::vector<std::vector<float>> collect(ServerContext& ctx, AttachedModel& model, Generation& gen,
                                        ConnectionWatch& watch, size_t n_inputs) {
  std::vector<std::vector<float>> vectors(n_inputs);
  while (!gen.finished()) {
    const std::vector<Generation::Event> events = gen.wait(kPollInterval);
    for (const Generation::Event& e : events) {
      if (e.event.finish == FinishReason::Abort)
        throw unavailable("The server is shutting down; the request was aborted.");
      if (e.event.finish == FinishReason::Error)
        throw internal_error(e.event.error.empty() ? "The engine failed to run the request." : e.event.error);
      if (e.event.request_done) vectors[static_cast<size_t>(e.index)] = e.event.embedding;
    }
    if (watch.peer_gone()) {
      gen.abort();
      throw ApiError(499, "client disconnected", "invalid_request_error");
    }
    if (events.empty() && !model.engine.healthy(ctx.options.engine_stall_timeout))
      throw unavailable("The engine loop is not responding.");
  }
  return vectors;
}

}  // namespace

void handle_embeddings(ServerContext& ctx, const httplib::Request& http_req, httplib::Response& res) {
  auto in_flight = std::make_unique<InFlight>(ctx);
  if (!ctx.options.embeddings)
    throw ApiError(501, "This server does not support embeddings. Start it with `--embeddings`.",
                   "not_supported_error");
  AttachedModel& model = ctx.require_ready();
  const ChatJson body = parse_json_body(http_req.body);
  const int64_t n_embd = model.engine.model().config().n_embd;
  EmbeddingRequest req = parse_embedding_request(body, model.served, n_embd);
  GenerationRequest gr;  // one engine request per input, nothing sampled
  gr.params.pooling = model.pooling;
  gr.params.stop.max_tokens = 0;
  for (auto& tokens : req.inputs) gr.prompts.push_back({std::move(tokens), {}});
  ConnectionWatch watch(http_req.local_addr, http_req.local_port, http_req.remote_addr, http_req.remote_port);
  Generation gen(model.engine, gr);
  std::vector<std::vector<float>> vectors = collect(ctx, model, gen, watch, gr.prompts.size());
  for (std::vector<float>& v : vectors) {
    for (float x : v)
      if (!std::isfinite(x)) throw internal_error("The model produced a non-finite embedding.");
    normalize_embedding(v, ctx.options.embd_normalize);
  }
  res.status = 200;
  res.set_content(response_body(vectors, req.base64, model.served.name, gen.usage().prompt_tokens),
                  "application/json");
}

}  // namespace strata::server
