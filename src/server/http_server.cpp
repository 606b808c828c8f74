#include "server/http_server.h"

#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/check.h"
#include "core/log.h"
#include "server/api_error.h"
#include "server/api_key.h"
#include "server/elastic_task_queue.h"
#include "server/server_context.h"
#include "server/webui.h"

namespace strata::server {

AttachedModel::AttachedModel(Engine& e, ChatTemplate tmpl, const std::string& name)
    : engine(e), chat_template(std::move(tmpl)) {
  served.tokenizer = &engine.model().tokenizer();
  served.chat_template = &chat_template;
  served.name = name;
  served.max_sequence_tokens = engine.capacity_tokens();
  served.constraints = std::make_shared<grammar::ConstraintCache>(grammar::TokenVocab::from_tokenizer(
      engine.model().tokenizer(), static_cast<int32_t>(engine.model().config().n_vocab)));
}

AttachedModel& ServerContext::require_ready() const {
  switch (phase.load()) {
    case Phase::Loading:
      throw unavailable("The model is loading; retry shortly.");
    case Phase::Draining:
      throw unavailable("The server is shutting down.");
    case Phase::Ready:
      break;
  }
  return *model;
}

InFlight::InFlight(ServerContext& ctx) : ctx_(ctx) {
  std::lock_guard<std::mutex> lock(ctx_.mu);
  ++ctx_.in_flight;
}

InFlight::~InFlight() {
  std::lock_guard<std::mutex> lock(ctx_.mu);
  if (--ctx_.in_flight == 0) ctx_.idle_cv.notify_all();
}

void set_error(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  if (status == 429) res.set_header("Retry-After", "1");
  if (status == 401) res.set_header("WWW-Authenticate", "Bearer");
  res.set_content(body, "application/json");
}

httplib::Server::Handler guarded(std::function<void(const httplib::Request&, httplib::Response&)> fn) {
  return [fn = std::move(fn)](const httplib::Request& req, httplib::Response& res) {
    try {
      fn(req, res);
    } catch (const ApiError& e) {
      set_error(res, e.status(), e.body());
    } catch (const Error& e) {
      set_error(res, 400, bad_request(e.what()).body());
    } catch (const std::bad_alloc&) {
      log_error(req.method, " ", req.path, ": out of memory");
      set_error(res, 500, internal_error("out of memory").body());
    } catch (const std::exception& e) {
      log_error(req.method, " ", req.path, ": ", e.what());
      set_error(res, 500, internal_error().body());
    }
  };
}

namespace {

constexpr int kListenBacklog = 1024;

// The body httplib's own error answers get (404 unknown route, 413, malformed HTTP ...).
std::string default_error_body(int status) {
  switch (status) {
    case 400:
      return bad_request("Malformed HTTP request.").body();
    case 404:
      return not_found("No such route.").body();
    case 405:
      return ApiError(405, "Method not allowed.", "invalid_request_error").body();
    case 413:
      return ApiError(413, "Request body too large.", "invalid_request_error", {}, "request_too_large")
          .body();
    case 414:
      return ApiError(414, "Request URI too long.", "invalid_request_error").body();
    default:
      return status >= 500 ? internal_error().body() : bad_request("Bad request.").body();
  }
}

}  // namespace

// httplib's server with a wider listen backlog: the library listens with a backlog of 5 fixed
// at its compile time, so a burst of clients connecting at once overflows the accept queue
// and the kernel drops their SYNs — each then waits a full second before it retries.
class Listener : public httplib::Server {
 public:
  // Listening again on a listening socket only changes its backlog (Linux).
  bool widen_backlog(int backlog) { return ::listen(svr_sock_, backlog) == 0; }
};

struct Server::Impl {
  explicit Impl(ServerOptions options) : ctx(std::move(options)) {}

  void install_routes();
  bool authorized(const httplib::Request& req) const;

  ServerContext ctx;
  Listener http;
  std::thread listener;
  std::atomic<bool> listen_returned{false};
  int port = -1;
};

bool Server::Impl::authorized(const httplib::Request& req) const {
  if (ctx.options.api_key.empty()) return true;
  const std::string header = req.get_header_value("Authorization");
  return api_key_equals(ctx.options.api_key, bearer_token(header));
}

void Server::Impl::install_routes() {
  const size_t max_body = ctx.options.max_body_bytes;
  http.set_payload_max_length(max_body);
  // httplib's default sets SO_REUSEPORT, which lets a second server bind the same port and
  // silently share its connections; SO_REUSEADDR alone still allows a quick restart.
  http.set_socket_options([](socket_t sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  // Stream chunks are small writes: without TCP_NODELAY, Nagle's algorithm would hold each
  // one back until the previous is acknowledged, adding latency between tokens.
  http.set_tcp_nodelay(true);
  // An idle keep-alive connection holds a connection thread, and stop() waits for it: keep the
  // idle time short (clients read the hint from the Keep-Alive header and reconnect).
  http.set_keep_alive_timeout(2);
  http.new_task_queue = [max = ctx.options.max_connection_threads] { return new ElasticTaskQueue(max); };
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (req.path == "/health" || (ctx.options.webui && is_webui_path(req.path)) || authorized(req))
      return httplib::Server::HandlerResponse::Unhandled;
    set_error(res, 401, unauthorized().body());
    return httplib::Server::HandlerResponse::Handled;
  });
  http.set_error_handler(httplib::Server::HandlerWithResponse([max_body](const httplib::Request&,
                                                                         httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // a handler's own error
    res.set_content(res.status == 413 ? payload_too_large(max_body).body() : default_error_body(res.status),
                    "application/json");
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr) {
    log_error(req.method, " ", req.path, ": unhandled exception");
    set_error(res, 500, internal_error().body());
  });
  http.Post("/v1/completions", guarded([this](const httplib::Request& req, httplib::Response& res) {
              handle_generation(ctx, req, res, Endpoint::Completions);
            }));
  http.Post("/v1/chat/completions", guarded([this](const httplib::Request& req, httplib::Response& res) {
              handle_generation(ctx, req, res, Endpoint::ChatCompletions);
            }));
  http.Post("/v1/embeddings", guarded([this](const httplib::Request& req, httplib::Response& res) {
              handle_embeddings(ctx, req, res);
            }));
  install_info_routes(http, ctx);
  if (ctx.options.webui) install_webui_routes(http);
}

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  // A client that disconnects makes the next write fail with EPIPE; without this the signal
  // would end the process.
  signal(SIGPIPE, SIG_IGN);
  impl_->install_routes();
}

Server::~Server() {
  stop();
}

void Server::start() {
  STRATA_CHECK(!impl_->listener.joinable(), "server started twice");
  const ServerOptions& o = impl_->ctx.options;
  if (o.port == 0) {
    impl_->port = impl_->http.bind_to_any_port(o.host);
  } else {
    impl_->port = impl_->http.bind_to_port(o.host, o.port) ? o.port : -1;
  }
  if (impl_->port < 0)
    STRATA_THROW("cannot listen on ", o.host, ":", o.port, " (address in use or not available)");
  if (!impl_->http.widen_backlog(kListenBacklog)) log_warn("cannot widen the listen backlog");
  impl_->listener = std::thread([this] {
    impl_->http.listen_after_bind();
    impl_->listen_returned.store(true);
  });
  // httplib's stop() only closes a socket that its listen loop already runs on: a stop() before
  // the thread got there would leave the loop in accept() forever and stop()'s join hanging (seen
  // on a loaded machine). So start() returns once the loop runs (or has already given up).
  while (!impl_->http.is_running() && !impl_->listen_returned.load())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

int Server::port() const {
  return impl_->port;
}

void Server::attach(Engine& engine) {
  STRATA_CHECK(impl_->ctx.phase.load() == Phase::Loading, "attach() called twice");
  ServerContext& ctx = impl_->ctx;
  const std::string& source = engine.model().tokenizer().chat_template();
  const std::string& name = ctx.options.served_model_name;
  std::optional<ChatTemplate> tmpl;
  if (!ctx.options.chat_template_source.empty()) {  // given by the user: it must parse
    log_info("chat template: using the one given with --chat-template-file");
    tmpl.emplace(ctx.options.chat_template_source);
  } else
    try {
      tmpl.emplace(
          make_chat_template(source.empty() ? std::nullopt : std::optional<std::string>(source), name));
    } catch (const Error& e) {  // a model whose template does not parse still serves completions
      log_warn("chat template of ", name, " is unusable (", e.what(), "); using the default ChatML template");
      tmpl.emplace(chatml_template_source());
    }
  ctx.model = std::make_unique<AttachedModel>(engine, std::move(*tmpl), name);
  const ModelConfig& mc = engine.model().config();
  const std::optional<Pooling> own = model_pooling(engine.model().file().metadata(), mc.arch);
  ctx.model->pooling = resolve_pooling(ctx.options.pooling, engine.model().file().metadata(), mc.arch);
  if (ctx.options.embeddings)
    log_info("embeddings: /v1/embeddings with ", pooling_name(ctx.model->pooling), " pooling (",
             ctx.options.pooling != Pooling::None ? "--pooling"
             : own                                ? "the model's pooling_type"
                                                  : "default",
             "), normalization ", ctx.options.embd_normalize);
  ctx.phase.store(Phase::Ready);
}

bool Server::ready() const {
  return impl_->ctx.phase.load() == Phase::Ready;
}

void Server::begin_drain() {
  impl_->ctx.phase.store(Phase::Draining);
}

bool Server::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->ctx.mu);
  return impl_->ctx.idle_cv.wait_for(lock, timeout, [&] { return impl_->ctx.in_flight == 0; });
}

int Server::in_flight() const {
  std::lock_guard<std::mutex> lock(impl_->ctx.mu);
  return impl_->ctx.in_flight;
}

void Server::stop() {
  if (!impl_->listener.joinable()) return;
  impl_->http.stop();
  impl_->listener.join();
}

}  // namespace strata::server
