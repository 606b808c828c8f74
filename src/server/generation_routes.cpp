// POST /v1/completions and /v1/chat/completions: validate, submit, answer as one JSON body
// or as a stream of SSE chunks ("data: {...}\n\n" ..., "data: [DONE]\n\n").
#include <chrono>

#include "core/log.h"
#include "server/api_error.h"
#include "server/api_key.h"
#include "server/connection_watch.h"
#include "server/generation.h"
#include "server/json_fields.h"
#include "server/response_writer.h"
#include "server/server_context.h"

namespace strata::server {
namespace {

// How long a connection thread waits for events before it checks on the client and engine.
constexpr auto kPollInterval = std::chrono::milliseconds(50);

// One request while it runs. Shared by the handler, the stream provider and its releaser; the
// last owner to let go aborts whatever is unfinished (Generation's destructor).
struct Run {
  Run(std::unique_ptr<InFlight> in_flight_, const ServerContext& ctx, AttachedModel& model_,
      GenerationRequest req_, const httplib::Request& http)
      : in_flight(std::move(in_flight_)),
        model(model_),
        stall_timeout(ctx.options.engine_stall_timeout),
        req(std::move(req_)),
        writer(req, *model.served.tokenizer, model.served.name),
        watch(http.local_addr, http.local_port, http.remote_addr, http.remote_port),
        gen(model.engine, req) {}

  std::unique_ptr<InFlight> in_flight;  // released last
  AttachedModel& model;
  std::chrono::milliseconds stall_timeout;
  GenerationRequest req;
  ResponseWriter writer;
  ConnectionWatch watch;
  Generation gen;  // submitted last, destroyed first
  bool opened = false;
};

// An engine event that ends the request with an error rather than an answer: the engine
// aborted it (shutdown timed out) or failed.
std::optional<ApiError> event_failure(const EngineEvent& ev) {
  if (ev.finish == FinishReason::Abort)
    return unavailable("The server is shutting down; the request was aborted.");
  if (ev.finish == FinishReason::Error)
    return internal_error(ev.error.empty() ? "The engine failed to run the request." : ev.error);
  return std::nullopt;
}

void run_to_completion(Run& run, httplib::Response& res) {
  for (;;) {
    std::vector<Generation::Event> events = run.gen.wait(kPollInterval);
    for (const Generation::Event& e : events) {
      if (auto failure = event_failure(e.event)) throw *failure;
      run.writer.add(e.index, e.event);
    }
    if (run.gen.finished()) break;
    if (run.watch.peer_gone()) {
      run.gen.abort();
      log_info("client disconnected; aborted ", run.writer.id());
      set_error(res, 499, error_body("client disconnected", "invalid_request_error"));
      return;
    }
    if (events.empty() && !run.model.engine.healthy(run.stall_timeout))
      throw unavailable("The engine loop is not responding.");
  }
  res.status = 200;
  res.set_content(run.writer.body(run.gen.usage()), "application/json");
}

std::string sse(const std::string& json) {
  return "data: " + json + "\n\n";
}

bool write_all(httplib::DataSink& sink, const std::string& s) {
  return s.empty() || sink.write(s.data(), s.size());
}

// One call of httplib's content provider: waits for events and writes their chunks. Returns
// false to drop the connection (client gone), true to be called again (or after sink.done()).
bool stream_step(Run& run, httplib::DataSink& sink) {
  std::string out;
  if (!run.opened) {  // the role (chat) or the echoed prompt goes out at once, as vLLM sends it
    run.opened = true;
    for (const std::string& chunk : run.writer.opening_chunks()) out += sse(chunk);
    if (!out.empty()) {
      if (write_all(sink, out)) return true;
      run.gen.abort();
      return false;
    }
  }
  for (;;) {
    std::vector<Generation::Event> events = run.gen.wait(kPollInterval);
    std::optional<ApiError> failure;
    for (const Generation::Event& e : events) {
      if ((failure = event_failure(e.event))) break;
      for (const std::string& chunk : run.writer.chunks(e.index, e.event)) out += sse(chunk);
    }
    if (failure) {  // the status line is long sent: the error travels as an event, as OpenAI's does
      run.gen.abort();
      out += sse(failure->body()) + "data: [DONE]\n\n";
    } else if (run.gen.finished()) {
      if (run.req.include_usage) out += sse(run.writer.usage_chunk(run.gen.usage()));
      out += "data: [DONE]\n\n";
    }
    if (!write_all(sink, out)) {
      run.gen.abort();
      log_info("client disconnected mid-stream; aborted ", run.writer.id());
      return false;
    }
    if (failure || run.gen.finished()) {
      sink.done();
      return true;
    }
    if (!out.empty()) return true;  // back to httplib, which checks the socket between writes
    if (run.watch.peer_gone()) {
      run.gen.abort();
      log_info("client disconnected; aborted ", run.writer.id());
      return false;
    }
    if (events.empty() && !run.model.engine.healthy(run.stall_timeout)) {
      out = sse(unavailable("The engine loop is not responding.").body());
      write_all(sink, out + "data: [DONE]\n\n");
      sink.done();
      return true;
    }
  }
}

}  // namespace

void handle_generation(ServerContext& ctx, const httplib::Request& http_req, httplib::Response& res,
                       Endpoint endpoint) {
  auto in_flight = std::make_unique<InFlight>(ctx);
  AttachedModel& model = ctx.require_ready();
  const ChatJson body = parse_json_body(http_req.body);
  GenerationRequest req = endpoint == Endpoint::ChatCompletions
                              ? parse_chat_request(body, model.served)
                              : parse_completion_request(body, model.served);
  // Cross-request drafter caches are partitioned by tenant: the API key the client presented.
  if (!ctx.options.api_key.empty())
    req.params.tenant = std::string(bearer_token(http_req.get_header_value("Authorization")));
  auto run = std::make_shared<Run>(std::move(in_flight), ctx, model, std::move(req), http_req);
  if (!run->req.stream) {
    run_to_completion(*run, res);
    return;
  }
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [run](size_t, httplib::DataSink& sink) {
        try {
          return stream_step(*run, sink);
        } catch (const std::exception& e) {  // never let an exception escape into httplib's thread
          log_error("stream ", run->writer.id(), " failed: ", e.what());
          return false;
        }
      },
      [run](bool) { run->gen.abort(); });
}

}  // namespace strata::server
