#include "engine/engine.h"

#include <algorithm>

#include "core/check.h"
#include "core/log.h"
#include "engine/engine_core.h"

namespace strata {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::None:
      return "";
    case FinishReason::Stop:
      return "stop";
    case FinishReason::Length:
      return "length";
    case FinishReason::Abort:
      return "abort";
    case FinishReason::Error:
      return "error";
  }
  return "";
}

// The thread-safe shell around the core: an inbox of new requests and aborts, the loop thread,
// and the stats snapshot that other threads read.
struct Engine::Impl {
  Impl(Model& model, const EngineConfig& cfg, EngineMetrics& metrics) : core(model, cfg, metrics) {}

  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::unique_ptr<RequestState>> inbox;  // guarded by mu
  std::vector<RequestId> abort_inbox;                // guarded by mu
  std::thread loop;
  std::atomic<bool> stop{false};
  std::atomic<bool> accepting{true};
  std::atomic<bool> loop_alive{false};
  std::atomic<int64_t> step_started_ns{0};  // 0 when not inside a step
  RequestId next_id = 1;                    // guarded by mu
  std::atomic<int32_t> n_unscheduled{0};    // the core's count, published after each step

  EngineCore core;  // engine thread only
  mutable std::mutex stats_mu;
  EngineStats stats;

  bool step(EngineMetrics& m);
  void drain_inbox();
  void update_stats(EngineMetrics& m, size_t inbox_size);
};

void Engine::Impl::drain_inbox() {
  std::vector<std::unique_ptr<RequestState>> fresh;
  std::vector<RequestId> aborts;
  {
    std::lock_guard<std::mutex> lock(mu);
    fresh.swap(inbox);
    aborts.swap(abort_inbox);
  }
  for (auto& r : fresh) core.add_request(std::move(r));
  for (RequestId id : aborts) core.abort(id, FinishReason::Abort, "");
}

bool Engine::Impl::step(EngineMetrics& m) {
  drain_inbox();
  const bool worked = core.step();
  size_t inbox_size;
  {
    std::lock_guard<std::mutex> lock(mu);
    inbox_size = inbox.size();
  }
  update_stats(m, inbox_size);
  return worked || inbox_size > 0;
}

void Engine::Impl::update_stats(EngineMetrics& m, size_t inbox_size) {
  EngineStats st;
  core.fill_stats(st);
  n_unscheduled = core.n_unscheduled();
  m.num_requests_running.set(st.running);
  m.num_requests_waiting.set(static_cast<double>(st.waiting) + static_cast<double>(inbox_size));
  m.kv_cache_usage.set(st.kv_blocks_total ? static_cast<double>(st.kv_blocks_used) / st.kv_blocks_total
                                          : 0.0);
  m.kv_cache_waste.set(st.kv_waste);
  m.kv_blocks_free.set(st.kv_blocks_total - st.kv_blocks_used);
  m.kv_block_bytes.set(static_cast<double>(st.kv_block_bytes));
  m.kv_total_bytes.set(static_cast<double>(st.kv_bytes_total));
  m.kv_used_bytes.set(static_cast<double>(st.kv_block_bytes) * st.kv_blocks_used);
  std::lock_guard<std::mutex> lock(stats_mu);
  st.prefix_queries = static_cast<int64_t>(m.prefix_cache_queries.value());
  st.prefix_hits = static_cast<int64_t>(m.prefix_cache_hits.value());
  st.preemptions = static_cast<int64_t>(m.preemptions.value());
  st.kv_evicted_tokens = static_cast<int64_t>(m.kv_evicted_tokens.value());
  st.steps = stats.steps + 1;
  stats = st;
}

Engine::Engine(Model& model, const EngineConfig& config) : model_(model), config_(config) {
  if (config.max_batched_tokens < 1 || config.max_num_seqs < 1 || config.block_size < 1 ||
      config.block_size > 32)
    STRATA_THROW(
        "invalid engine configuration (max_batched_tokens, max_num_seqs >= 1, block_size in [1, 32])");
  impl_ = std::make_unique<Impl>(model, config, metrics_);
  impl_->update_stats(metrics_, 0);
}

Engine::~Engine() {
  impl_->stop = true;
  impl_->cv.notify_all();
  if (impl_->loop.joinable()) impl_->loop.join();
}

int64_t Engine::max_model_len() const {
  return impl_->core.max_len();
}

int64_t Engine::capacity_tokens() const {
  return std::min<int64_t>(impl_->core.max_len(),
                           static_cast<int64_t>(impl_->core.n_blocks()) * config_.block_size);
}

SubmitResult Engine::submit(RequestParams p, EventCallback on_event) {
  const int32_t n_vocab = static_cast<int32_t>(model_.config().n_vocab);
  if (p.prompt.empty()) STRATA_THROW("the prompt is empty");
  for (int32_t t : p.prompt)
    if (t < 0 || t >= n_vocab)
      STRATA_THROW("prompt token id ", t, " is outside the vocabulary [0, ", n_vocab, ")");
  if (p.n < 1 || p.n > 128) STRATA_THROW("n must be in [1, 128], got ", p.n);
  const bool embedding = p.pooling != Pooling::None;
  if (embedding && (p.n != 1 || p.stop.max_tokens != 0 || p.prompt_logits_from >= 0 || p.constraint))
    STRATA_THROW(
        "an embedding request has one choice and no output (n 1, max_tokens 0, no logits or constraint)");
  const bool scoring = p.prompt_logits_from >= 0 || embedding;
  if (p.stop.max_tokens < (scoring ? 0 : 1))
    STRATA_THROW("max_tokens must be at least 1, got ", p.stop.max_tokens);
  if (p.prompt_logits_from >= static_cast<int64_t>(p.prompt.size()))
    STRATA_THROW("prompt_logits_from ", p.prompt_logits_from, " is beyond the prompt");
  if (p.top_logprobs > 20) STRATA_THROW("top_logprobs must be at most 20, got ", p.top_logprobs);
  p.sampling.validate(n_vocab);
  const int64_t max_len = impl_->core.max_len();
  const int64_t total = static_cast<int64_t>(p.prompt.size()) + p.stop.max_tokens;
  if (total > max_len)
    STRATA_THROW("this model's maximum context length is ", max_len, " tokens, but ", total,
                 " were requested (", p.prompt.size(), " in the prompt, ", p.stop.max_tokens,
                 " to generate)");
  // With a sliding window a sequence holds at most the window, one chunk and a partial block.
  const int64_t window = model_.config().common_window();
  const int64_t held =
      config_.kv_window.enabled()
          ? std::min(total, config_.kv_window.max_held_tokens(config_.max_batched_tokens, config_.block_size))
      : window > 0 ? std::min<int64_t>(total, window + config_.max_batched_tokens + config_.block_size)
                   : total;
  const int64_t blocks = (held + config_.block_size - 1) / config_.block_size;
  if (blocks > impl_->core.n_blocks())
    STRATA_THROW("the request needs ", total, " tokens of KV cache but the whole cache holds ",
                 static_cast<int64_t>(impl_->core.n_blocks()) * config_.block_size);
  auto r = std::make_unique<RequestState>();
  r->spec = impl_->core.resolve_spec(p.speculative);  // throws for a method this engine lacks
  if (!impl_->accepting) return {SubmitStatus::ShuttingDown, 0};
  r->params = std::move(p);
  r->on_event = std::move(on_event);
  r->arrival = Clock::now();
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (static_cast<int32_t>(impl_->inbox.size()) + impl_->n_unscheduled.load() >= config_.max_queue)
    return {SubmitStatus::QueueFull, 0};
  r->id = impl_->next_id++;
  const RequestId id = r->id;
  impl_->inbox.push_back(std::move(r));
  impl_->cv.notify_all();
  return {SubmitStatus::Accepted, id};
}

void Engine::abort(RequestId id) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->abort_inbox.push_back(id);
  impl_->cv.notify_all();
}

bool Engine::step() {
  return impl_->step(metrics_);
}

void Engine::run_until_idle() {
  while (impl_->step(metrics_)) {
  }
}

void Engine::start() {
  STRATA_CHECK(!impl_->loop.joinable(), "engine already started");
  impl_->loop_alive = true;
  impl_->loop = std::thread([this] {
    Impl& im = *impl_;
    while (!im.stop) {
      {
        std::unique_lock<std::mutex> lock(im.mu);
        // The core's state is only read here, between steps, on this same thread.
        im.cv.wait(lock, [&] {
          return im.stop || !im.inbox.empty() || !im.abort_inbox.empty() || im.core.has_work();
        });
      }
      if (im.stop) break;
      im.step_started_ns = Clock::now().time_since_epoch().count();
      try {
        im.step(metrics_);
      } catch (const std::exception& e) {
        log_error("engine step: ", e.what());
      }
      im.step_started_ns = 0;
    }
    im.loop_alive = false;
  });
}

bool Engine::shutdown(std::chrono::milliseconds timeout) {
  impl_->accepting = false;
  const auto deadline = Clock::now() + timeout;
  bool drained = false;
  while (Clock::now() < deadline) {
    {
      std::lock_guard<std::mutex> lock(impl_->stats_mu);
      drained = impl_->stats.running == 0 && impl_->stats.waiting == 0;
    }
    {
      std::lock_guard<std::mutex> lock(impl_->mu);
      drained = drained && impl_->inbox.empty();
    }
    if (drained || !impl_->loop.joinable()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  impl_->stop = true;
  impl_->cv.notify_all();
  if (impl_->loop.joinable()) impl_->loop.join();
  // Whatever is left is aborted so every client gets a final event.
  impl_->drain_inbox();
  impl_->core.abort_all(FinishReason::Abort, "server shutting down");
  return drained;
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(impl_->stats_mu);
  return impl_->stats;
}

bool Engine::healthy(std::chrono::milliseconds stall) const {
  if (impl_->loop.joinable() && !impl_->loop_alive) return false;
  const int64_t started = impl_->step_started_ns.load();
  if (started == 0) return true;
  const auto running_for = Clock::now().time_since_epoch() - Clock::duration(started);
  return running_for < stall;
}

}  // namespace strata
