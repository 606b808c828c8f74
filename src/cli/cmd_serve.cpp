// `strata serve`: the OpenAI-compatible HTTP server.
//
// The listener comes up first and answers /health with 503 while the model loads. SIGTERM or
// SIGINT drains: new requests get 503, requests in flight finish (up to --shutdown-timeout,
// then they are aborted with an error), and the process exits 0. A second signal exits at once.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>

#include "cli/command.h"
#include "cli/model_setup.h"
#include "core/check.h"
#include "core/log.h"
#include "engine/engine.h"
#include "server/byte_size.h"
#include "server/http_server.h"
#include "template/chat_template.h"

namespace strata::cli {
namespace {

struct ServeOptions {
  ModelOptions model;
  server::ServerOptions http;
  std::string kv_cache_mem;  // SIZE, e.g. 2GiB
  double kv_cache_fraction = 0.0;
  EngineConfig engine;
  KvEvictOptions kv_evict;
  SpecOptions spec;
  std::string scheduler = "continuous";
  bool no_prefix_caching = false;
  std::string kv_offload_mem, kv_offload_disk;
  double shutdown_timeout_s = 30.0;
  std::string max_body = "16MiB";
  std::string chat_template_file;
  bool no_webui = false;
  std::string pooling;  // --pooling (empty: the model's, else mean)
};

// Waits for SIGTERM/SIGINT on a thread of its own (the signals are blocked everywhere else,
// so no other thread is interrupted); the first starts the drain, a second exits at once.
class SignalWaiter {
 public:
  SignalWaiter() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGINT);
    // Before any other thread exists, so that every thread inherits the mask.
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
    std::thread([this] { loop(); }).detach();
  }

  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return signalled_; });
  }
  bool signalled() {
    std::lock_guard<std::mutex> lock(mu_);
    return signalled_;
  }

 private:
  void loop() {
    for (;;) {
      int sig = 0;
      if (sigwait(&set_, &sig) != 0) continue;
      std::lock_guard<std::mutex> lock(mu_);
      if (signalled_) {
        log_warn("second signal: exiting without draining");
        std::_Exit(1);
      }
      log_info(sig == SIGTERM ? "SIGTERM" : "SIGINT", ": draining (a second signal exits at once)");
      signalled_ = true;
      cv_.notify_all();
    }
  }

  sigset_t set_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool signalled_ = false;
};

std::string file_name_of(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

void configure(ServeOptions& o) {
  if (o.http.served_model_name.empty()) o.http.served_model_name = file_name_of(o.model.model);
  o.http.max_body_bytes = server::parse_byte_size(o.max_body);
  o.http.webui = !o.no_webui;
  if (!o.chat_template_file.empty()) {
    std::ifstream in(o.chat_template_file, std::ios::binary);
    if (!in) STRATA_THROW("--chat-template-file: cannot read ", o.chat_template_file);
    o.http.chat_template_source.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (o.http.chat_template_source.empty())
      STRATA_THROW("--chat-template-file ", o.chat_template_file, " is empty");
    try {
      ChatTemplate check(o.http.chat_template_source);  // a syntax error stops the server before it listens
    } catch (const Error& e) {
      STRATA_THROW("--chat-template-file ", o.chat_template_file, ": ", e.what());
    }
  }
  if (o.http.max_body_bytes == 0) STRATA_THROW("--max-body-bytes must be positive");
  if (!o.kv_cache_mem.empty()) {
    o.engine.kv_cache_bytes = server::parse_byte_size(o.kv_cache_mem);
    if (o.engine.kv_cache_bytes == 0) STRATA_THROW("--kv-cache-mem must be positive");
  }
  if (o.kv_cache_fraction > 0.0) o.engine.kv_cache_fraction = o.kv_cache_fraction;
  o.engine.prefix_caching = !o.no_prefix_caching;
  if (!o.kv_offload_mem.empty()) o.engine.kv_offload_mem = server::parse_byte_size(o.kv_offload_mem);
  if (!o.kv_offload_disk.empty()) {
    o.engine.kv_offload_disk = server::parse_byte_size(o.kv_offload_disk);
    if (o.engine.kv_offload_disk == 0) STRATA_THROW("--kv-offload-disk must be positive");
  }
  o.engine.kv_type = o.model.kv.resolve();
  o.engine.kv_evict = o.kv_evict.resolve();
  o.engine.static_batching = o.scheduler == "static";
  o.engine.spec = spec_config(o.spec);
  o.engine.model_name = o.http.served_model_name;
  if (!o.pooling.empty()) o.http.pooling = parse_pooling(o.pooling);
}

void serve(ServeOptions& o) {
  configure(o);
  SignalWaiter signals;
  server::Server http(o.http);
  http.start();
  log_info("listening on http://", o.http.host, ":", http.port(), " (model '", o.http.served_model_name,
           "' loading)");
  LoadedModel lm = load_model(o.model);
  Engine engine(*lm.model, o.engine);
  engine.start();
  http.attach(engine);
  log_info("ready: http://", o.http.host, ":", http.port(), "/v1 serves '", o.http.served_model_name, "'",
           o.http.api_key.empty() ? "" : " (API key required)");
  if (o.http.webui) log_info("chat page: http://", o.http.host, ":", http.port(), "/");
  signals.wait();
  http.begin_drain();
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(o.shutdown_timeout_s * 1000.0));
  const int in_flight = http.in_flight();
  const bool finished = engine.shutdown(timeout);
  // Aborted or finished, every request has its last event now; give the connection threads a
  // moment to write the answers out.
  const bool written = http.wait_idle(std::chrono::seconds(5));
  http.stop();
  log_info("shut down: ", in_flight, " request(s) were in flight; ",
           finished ? "all finished" : "the unfinished were aborted at the timeout",
           written ? "" : "; some answers were not written");
}

void setup(CLI::App& cmd) {
  auto o = std::make_shared<ServeOptions>();
  add_model_options(cmd, o->model);
  add_w8a8_options(cmd, o->model.w8a8);
  add_kv_options(cmd, o->model.kv);
  add_kv_window_options(cmd, o->engine.kv_window);
  add_kv_evict_options(cmd, o->kv_evict);
  cmd.add_option("--host", o->http.host, "Address to listen on")->capture_default_str();
  cmd.add_option("--port", o->http.port, "Port to listen on (0: any free port, printed at start)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd.add_option("--api-key", o->http.api_key,
                 "Require 'Authorization: Bearer KEY' on every route but /health");
  cmd.add_option("--served-model-name", o->http.served_model_name,
                 "Model name clients use (default: file name)");
  cmd.add_option("--kv-cache-mem", o->kv_cache_mem, "KV cache size, e.g. 512MiB or 2GiB");
  cmd.add_option("--kv-cache-fraction", o->kv_cache_fraction,
                 "KV cache as a fraction of available memory (default 0.25; ignored with --kv-cache-mem)")
      ->check(CLI::Range(0.0, 0.95));
  cmd.add_option("--max-batched-tokens", o->engine.max_batched_tokens, "Token budget of one engine step")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd.add_option("--max-num-seqs", o->engine.max_num_seqs, "Sequences in one engine step")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd.add_option("--max-queue", o->engine.max_queue, "Waiting requests beyond this get 429")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  cmd.add_option("--max-model-len", o->engine.max_model_len, "Prompt + output limit (0: the model's context)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  cmd.add_flag("--no-prefix-caching", o->no_prefix_caching, "Disable prefix caching");
  cmd.add_option("--kv-offload-mem", o->kv_offload_mem,
                 "Host RAM for prefix-cache blocks evicted from the KV cache, e.g. 2GiB (default: none)");
  cmd.add_option("--kv-offload-dir", o->engine.kv_offload_dir,
                 "Directory of prefix-cache blocks on disk, reused after a restart (default: none)");
  cmd.add_option("--kv-offload-disk", o->kv_offload_disk, "Size bound of --kv-offload-dir (default 4GiB)");
  add_spec_options(cmd, o->spec);
  cmd.add_option("--scheduler", o->scheduler,
                 "continuous (default) or static (request-level batching baseline)")
      ->check(CLI::IsMember({"continuous", "static"}));
  cmd.add_option("--shutdown-timeout", o->shutdown_timeout_s,
                 "Seconds in-flight requests may take to finish after SIGTERM")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  cmd.add_option("--max-body-bytes", o->max_body, "Largest request body (e.g. 16MiB); larger gets 413")
      ->capture_default_str();
  cmd.add_option("--chat-template-file", o->chat_template_file,
                 "Jinja chat template used instead of the model's (llama.cpp's flag)");
  cmd.add_flag("--no-webui", o->no_webui, "Do not serve the browser chat page at / (llama.cpp's flag)");
  cmd.add_flag("--embeddings", o->http.embeddings,
               "Serve POST /v1/embeddings (llama-server's flag; generation routes stay on)");
  cmd.add_option("--pooling", o->pooling,
                 "Embedding pooling: mean, cls or last (default: the GGUF's pooling_type, else mean)")
      ->check(CLI::IsMember({"mean", "cls", "last"}));
  cmd.add_option("--embd-normalize", o->http.embd_normalize,
                 "Embedding normalization: -1 none, 0 max-abs to int16 range, 1 taxicab, 2 Euclidean, "
                 ">2 p-norm")
      ->check(CLI::Range(-1, 1 << 20))
      ->capture_default_str();
  cmd.callback([o] { serve(*o); });
}

}  // namespace

STRATA_REGISTER_COMMAND("", "serve", setup, "OpenAI-compatible HTTP server");

}  // namespace strata::cli
