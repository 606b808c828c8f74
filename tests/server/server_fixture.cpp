#include "server_fixture.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "common/fixtures.h"
#include "formats/model_file.h"

namespace strata::test {

const Tokenizer& stories_tokenizer() {
  static const std::unique_ptr<Tokenizer> tok = [] {
    auto file = open_model_file(shared_path(kStoriesModel));
    return Tokenizer::from_metadata(file->metadata());
  }();
  return *tok;
}

server::ServedModel stories_served(int64_t max_sequence_tokens) {
  static const ChatTemplate chatml(chatml_template_source());
  server::ServedModel m;
  m.tokenizer = &stories_tokenizer();
  m.chat_template = &chatml;
  m.name = "stories";
  m.max_sequence_tokens = max_sequence_tokens;
  return m;
}

std::vector<GreedyReference> stories_references() {
  std::ifstream in(shared_path("reference/stories260K.jsonl"));
  std::vector<GreedyReference> refs;
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    refs.push_back({j["prompt"], j["tokens"].get<std::vector<int32_t>>(), j["greedy_text"]});
  }
  return refs;
}

LiveServer::LiveServer(server::ServerOptions options, EngineConfig config, bool attach_now) {
  options.host = "127.0.0.1";
  options.port = 0;
  if (options.served_model_name.empty()) options.served_model_name = "stories";
  api_key_ = options.api_key;
  backend_ = make_cpu_backend(1);
  model_ = Model::load(shared_path(kStoriesModel), *backend_);
  if (config.kv_cache_bytes == 0) config.kv_cache_bytes = 4u << 20;
  engine_ = std::make_unique<Engine>(*model_, config);
  server_ = std::make_unique<server::Server>(options);
  server_->start();
  if (attach_now) attach();
}

void LiveServer::attach() {
  engine_->start();
  server_->attach(*engine_);
}

LiveServer::~LiveServer() {
  server_->begin_drain();
  engine_->shutdown(std::chrono::seconds(5));
  server_->wait_idle(std::chrono::seconds(5));
  server_->stop();
}

httplib::Client LiveServer::client(const std::string& api_key) const {
  httplib::Client c("127.0.0.1", port());
  c.set_read_timeout(300, 0);  // a wait, not a speed requirement: sanitizers and load are slow
  const std::string key = api_key.empty() ? api_key_ : api_key;
  if (!key.empty()) c.set_bearer_token_auth(key.c_str());
  return c;
}

httplib::Result LiveServer::post(const std::string& path, const nlohmann::json& body,
                                 const std::string& api_key) const {
  return client(api_key).Post(path.c_str(), body.dump(), "application/json");
}

double LiveServer::metric(const std::string& name) const {
  auto res = client().Get("/metrics");
  if (!res || res->status != 200) return NAN;
  std::istringstream in(res->body);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  return NAN;
}

SseStream parse_sse(const std::string& body) {
  SseStream s;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find("\n\n", pos);
    if (end == std::string::npos || body.compare(pos, 6, "data: ") != 0 || s.done) {
      s.well_formed = false;
      break;
    }
    const std::string data = body.substr(pos + 6, end - pos - 6);
    if (data == "[DONE]")
      s.done = true;
    else
      s.chunks.push_back(nlohmann::json::parse(data));
    pos = end + 2;
  }
  return s;
}

}  // namespace strata::test
