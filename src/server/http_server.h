// The OpenAI-compatible HTTP server (`strata serve`).
//
// Routes: POST /v1/completions, POST /v1/chat/completions (JSON or SSE streaming),
// POST /v1/embeddings (with --embeddings),
// GET /v1/models[/ID], GET /health, GET /metrics (Prometheus text), POST /tokenize,
// POST /detokenize, GET /debug/stats (engine counters as JSON, for tests and operators), and the
// browser chat page at GET / (server/webui.h). Every route except /health and the page's files
// needs the API key when one is set. Errors are OpenAI-shaped.
//
// Life cycle: start() binds and serves at once, answering 503 until attach() hands it the
// engine (the model loads meanwhile); drain() refuses new work with 503 and waits for the
// requests in flight; stop() closes the listener. Each request is handled on its own
// connection thread, which waits on the engine's events; the engine loop never waits on it.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "engine/embedding.h"

namespace strata {
class Engine;
}

namespace strata::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                       // 0: any free port (see Server::port())
  std::string api_key;                   // empty: no authentication
  std::string served_model_name;         // the `model` clients name
  size_t max_body_bytes = 16u << 20;     // larger bodies are refused with 413
  size_t max_connection_threads = 4096;  // connections served at once (each request holds one)
  // /health reports 503 when an engine step has been running longer than this.
  std::chrono::milliseconds engine_stall_timeout{std::chrono::seconds(60)};
  // Jinja source that replaces the model's chat template (--chat-template-file); empty: the
  // model's own (or ChatML when it has none).
  std::string chat_template_source;
  // The browser chat page at GET / (--no-webui: off, and GET / answers 404).
  bool webui = true;
  // POST /v1/embeddings is served only with --embeddings (else 501, as llama-server answers).
  bool embeddings = false;
  Pooling pooling = Pooling::None;  // --pooling; None: the GGUF's <arch>.pooling_type, else mean
  int32_t embd_normalize = 2;       // --embd-normalize (llama.cpp's values; 2: Euclidean)
};

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();  // stops serving (drain first for a graceful exit)
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds host:port and serves on a background thread. Throws strata::Error when the address
  // cannot be bound.
  void start();
  int port() const;

  // Model routes go live on this engine (already started; it must outlive the server).
  void attach(Engine& engine);
  bool ready() const;

  // Refuses new requests (503) from now on.
  void begin_drain();
  // Waits until no request is in flight; false on timeout.
  bool wait_idle(std::chrono::milliseconds timeout);
  int in_flight() const;

  // Closes the listener and the connection threads (in-flight streams are cut).
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::server
