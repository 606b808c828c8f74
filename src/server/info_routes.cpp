// The routes around generation: health, metrics, models, tokenize/detokenize, debug stats.
#include <ctime>

#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/response_writer.h"
#include "server/server_context.h"

namespace strata::server {
namespace {

void json_answer(httplib::Response& res, const ChatJson& j) {
  res.status = 200;
  res.set_content(dump_json(j), "application/json");
}

// 200 when the engine loop is alive and stepping; 503 while loading, draining, or when the
// loop died or a step has run longer than the stall timeout.
void health(const ServerContext& ctx, httplib::Response& res) {
  AttachedModel& model = ctx.require_ready();
  if (!model.engine.healthy(ctx.options.engine_stall_timeout))
    throw unavailable("The engine loop is not responding.");
  json_answer(res, {{"status", "ok"}});
}

ChatJson model_card(const AttachedModel& m) {
  static const int64_t created = static_cast<int64_t>(std::time(nullptr));
  return {{"id", m.served.name},
          {"object", "model"},
          {"created", created},
          {"owned_by", "strata"},
          {"max_model_len", m.served.max_sequence_tokens}};
}

ChatJson engine_stats(const ServerContext& ctx, const AttachedModel& m) {
  const EngineStats s = m.engine.stats();
  std::lock_guard<std::mutex> lock(ctx.mu);
  return {{"running", s.running},
          {"waiting", s.waiting},
          {"kv_blocks_total", s.kv_blocks_total},
          {"kv_blocks_used", s.kv_blocks_used},
          {"kv_blocks_cached", s.kv_blocks_cached},
          {"kv_waste", s.kv_waste},
          {"block_size", m.engine.config().block_size},
          {"prefix_queries", s.prefix_queries},
          {"prefix_hits", s.prefix_hits},
          {"preemptions", s.preemptions},
          {"steps", s.steps},
          {"http_in_flight", ctx.in_flight}};
}

// POST /tokenize: {"prompt": text | [ids]} or {"messages": [...]} (through the chat template);
// "add_special_tokens" (vLLM) or "add_special" (llama.cpp) chooses whether BOS is added to
// a text prompt (default true). Answers {"tokens", "count", "max_model_len"}.
void tokenize(const ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const AttachedModel& m = ctx.require_ready();
  const ChatJson body = parse_json_body(req.body);
  const JsonFields f(body);
  const Tokenizer& tok = *m.served.tokenizer;
  std::vector<int32_t> tokens;
  if (f.has("messages")) {
    tokens = render_chat_prompt(body, m.served).tokens;
  } else {
    const ChatJson* prompt = f.get("prompt");
    if (!prompt) prompt = f.get("content");
    if (!prompt || !prompt->is_string())
      throw invalid_type("prompt", "'prompt' must be a string (or send 'messages').");
    std::optional<bool> add_special = f.boolean("add_special_tokens");
    if (!add_special) add_special = f.boolean("add_special");
    tokens =
        tok.encode(prompt->get_ref<const std::string&>(), add_special.value_or(true), /*parse_special=*/true);
  }
  json_answer(res, {{"tokens", tokens},
                    {"count", static_cast<int64_t>(tokens.size())},
                    {"max_model_len", m.served.max_sequence_tokens}});
}

// POST /detokenize: {"tokens": [ids]} -> {"prompt": text} (vLLM's name; "content" as llama.cpp).
void detokenize(const ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const AttachedModel& m = ctx.require_ready();
  const ChatJson body = parse_json_body(req.body);
  const JsonFields f(body);
  const ChatJson* ids = f.get("tokens");
  if (!ids || !ids->is_array()) throw invalid_type("tokens", "'tokens' must be an array of token ids.");
  const Tokenizer& tok = *m.served.tokenizer;
  std::vector<int32_t> tokens;
  for (size_t i = 0; i < ids->size(); ++i)
    tokens.push_back(static_cast<int32_t>(
        json_integer((*ids)[i], "tokens[" + std::to_string(i) + "]", 0, tok.n_vocab() - 1)));
  const std::string text = tok.decode(tokens);
  json_answer(res, {{"prompt", text}, {"content", text}});
}

}  // namespace

void install_info_routes(httplib::Server& http, ServerContext& ctx) {
  http.Get("/health", guarded([&ctx](const httplib::Request&, httplib::Response& res) { health(ctx, res); }));
  http.Get("/metrics", guarded([&ctx](const httplib::Request&, httplib::Response& res) {
             const AttachedModel& m = ctx.require_ready();
             res.status = 200;
             res.set_content(m.engine.metrics().render(), "text/plain; version=0.0.4; charset=utf-8");
           }));
  http.Get(
      "/v1/models", guarded([&ctx](const httplib::Request&, httplib::Response& res) {
        json_answer(res, {{"object", "list"}, {"data", ChatJson::array({model_card(ctx.require_ready())})}});
      }));
  http.Get(R"(/v1/models/(.+))", guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
             const AttachedModel& m = ctx.require_ready();
             if (req.matches[1] != m.served.name)
               throw not_found("The model does not exist.", "model_not_found");
             json_answer(res, model_card(m));
           }));
  http.Get("/debug/stats", guarded([&ctx](const httplib::Request&, httplib::Response& res) {
             json_answer(res, engine_stats(ctx, ctx.require_ready()));
           }));
  http.Post("/tokenize", guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
              tokenize(ctx, req, res);
            }));
  http.Post("/detokenize", guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
              detokenize(ctx, req, res);
            }));
}

}  // namespace strata::server
