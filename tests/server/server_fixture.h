// Shared pieces of the server tests: the stories260K tokenizer, and a live server (real
// engine on stories260K, real HTTP on a loopback port) driven with httplib's client.
#pragma once

#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "backend/backend.h"
#include "engine/engine.h"
#include "model/model.h"
#include "server/generation_request.h"
#include "server/http_server.h"

namespace strata::test {

inline const char* kStoriesModel = "models/stories260K/stories260K.gguf";

// The stories260K tokenizer (vocabulary of 512, SentencePiece, BOS added), loaded once.
const Tokenizer& stories_tokenizer();
// A ServedModel over it with the default ChatML template, named "stories".
server::ServedModel stories_served(int64_t max_sequence_tokens = 512);

// One line of reference/stories260K.jsonl (llama.cpp's tokens and greedy continuation).
struct GreedyReference {
  std::string prompt;
  std::vector<int32_t> tokens;  // BOS first
  std::string greedy_text;      // 64 greedy tokens
};
std::vector<GreedyReference> stories_references();

class LiveServer {
 public:
  // Starts the server on a free port; attaches a started engine unless `attach` is false.
  explicit LiveServer(server::ServerOptions options = {}, EngineConfig config = {}, bool attach = true);
  ~LiveServer();

  void attach();
  httplib::Client client(const std::string& api_key = "") const;
  server::Server& server() { return *server_; }
  Engine& engine() { return *engine_; }
  int port() const { return server_->port(); }

  // POST a JSON body; the answer's status and body.
  httplib::Result post(const std::string& path, const nlohmann::json& body,
                       const std::string& api_key = "") const;
  // The value of one metric (a line "name value" of /metrics), or NaN when absent.
  double metric(const std::string& name) const;

 private:
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<server::Server> server_;
  std::string api_key_;
};

// Parses "data: ..." lines of an SSE body: the JSON payloads, and whether [DONE] ended it.
struct SseStream {
  std::vector<nlohmann::json> chunks;
  bool done = false;
  bool well_formed = true;  // every event is "data: X\n\n" and nothing follows [DONE]
};
SseStream parse_sse(const std::string& body);

}  // namespace strata::test
