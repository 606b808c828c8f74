// State shared by the server's route handlers (internal to src/server).
#pragma once

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "engine/engine.h"
#include "server/generation_request.h"
#include "server/http_server.h"

namespace strata::server {

enum class Phase { Loading, Ready, Draining };

// The engine and what requests are validated against, fixed at attach().
struct AttachedModel {
  AttachedModel(Engine& engine, ChatTemplate chat_template, const std::string& name);
  Engine& engine;
  ChatTemplate chat_template;
  ServedModel served;               // points at engine.model().tokenizer() and chat_template
  Pooling pooling = Pooling::Mean;  // of /v1/embeddings: --pooling, else the model's, else mean
};

struct ServerContext {
  explicit ServerContext(ServerOptions o) : options(std::move(o)) {}

  // The attached model when serving; otherwise throws ApiError 503 (loading, draining).
  AttachedModel& require_ready() const;

  ServerOptions options;
  std::atomic<Phase> phase{Phase::Loading};
  std::unique_ptr<AttachedModel> model;  // set once, before phase becomes Ready

  mutable std::mutex mu;
  std::condition_variable idle_cv;
  int in_flight = 0;
};

// Counts a request in flight from its arrival until its answer is written (streams: until
// the last chunk). Taken before the phase is checked, so drain() never misses a request.
class InFlight {
 public:
  explicit InFlight(ServerContext& ctx);
  ~InFlight();
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  ServerContext& ctx_;
};

// POST /v1/completions and /v1/chat/completions.
void handle_generation(ServerContext& ctx, const httplib::Request& http_req, httplib::Response& res,
                       Endpoint endpoint);

// POST /v1/embeddings.
void handle_embeddings(ServerContext& ctx, const httplib::Request& http_req, httplib::Response& res);

// GET /health, /metrics, /v1/models[/ID], /debug/stats; POST /tokenize, /detokenize.
void install_info_routes(httplib::Server& http, ServerContext& ctx);

// Wraps a handler so that every exception becomes an OpenAI-shaped error. Only ApiError and
// strata::Error messages reach the client (they are written for it); anything else is logged
// and answered with a generic 500, so no internal detail leaks.
httplib::Server::Handler guarded(std::function<void(const httplib::Request&, httplib::Response&)> fn);

// Sets an OpenAI-shaped error answer (with Retry-After for 429).
void set_error(httplib::Response& res, int status, const std::string& body);

}  // namespace strata::server
