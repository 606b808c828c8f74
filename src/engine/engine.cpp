#include "engine/engine.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <unordered_map>

#include "core/check.h"
#include "core/log.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "kv/kv_storage.h"
#include "kv/prefix_hash.h"

namespace strata {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::None: return "";
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Abort: return "abort";
    case FinishReason::Error: return "error";
  }
  return "";
}

namespace {

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// MemAvailable from /proc/meminfo, in bytes (0 if unknown).
size_t available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  size_t kb = 0;
  while (in >> key >> kb) {
    if (key == "MemAvailable:") return kb * 1024;
    in.ignore(1 << 10, '\n');
  }
  return 0;
}

}  // namespace

struct Engine::Impl {
  Impl(Engine& e, Model& model, const EngineConfig& cfg);

  // Loop thread and inbox.
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::unique_ptr<RequestState>> inbox;
  std::vector<RequestId> abort_inbox;
  std::thread loop;
  std::atomic<bool> stop{false};
  std::atomic<bool> accepting{true};
  std::atomic<bool> loop_alive{false};
  std::atomic<int64_t> step_started_ns{0};  // 0 when not inside a step
  RequestId next_id = 1;
  std::atomic<int32_t> n_queued{0};  // inbox + waiting, for the queue limit

  // Engine-thread state.
  Engine& engine;
  Model& model;
  int64_t max_len;
  std::unique_ptr<KvStorage> kv_storage;
  std::unique_ptr<KvCacheManager> kv;
  std::unique_ptr<Scheduler> scheduler;
  std::map<RequestId, std::unique_ptr<RequestState>> requests;
  // Finished requests are destroyed at the end of the step: chunks of this step may still
  // point at their sequences.
  std::vector<RequestId> finished_requests;
  void erase_finished() {
    for (RequestId id : finished_requests) requests.erase(id);
    finished_requests.clear();
  }
  std::vector<float> logits;
  ForwardBatch batch;
  mutable std::mutex stats_mu;
  EngineStats stats;

  bool step();
  void drain_inbox();
  void execute(const ScheduleOutput& so);
  void process_outputs(const ScheduleOutput& so);
  void fork_children(Sequence& parent);
  void sample_and_emit(Sequence& seq, const float* logits_row);
  void finish_sequence(Sequence& seq, FinishReason reason, std::string text, std::vector<TokenOutput> tokens,
                       const std::string& error = "");
  void abort_request(RequestState& r, FinishReason reason, const std::string& error);
  void update_stats();
  std::unique_ptr<Sequence> make_sequence(RequestState& r, int32_t index);
};

Engine::Impl::Impl(Engine& e, Model& m, const EngineConfig& cfg) : engine(e), model(m) {
  const ModelConfig& mc = m.config();
  max_len = cfg.max_model_len > 0 ? std::min<int64_t>(cfg.max_model_len, int64_t{1} << 24) : mc.n_ctx_train;
  const KvGeometry g = m.kv_geometry(cfg.kv_type, cfg.block_size);
  size_t bytes = cfg.kv_cache_bytes;
  if (bytes == 0) bytes = static_cast<size_t>(static_cast<double>(available_memory()) * cfg.kv_cache_fraction);
  int32_t n_blocks = KvStorage::blocks_for_bytes(g, bytes);
  // More blocks than max_num_seqs full-length sequences can use would only waste memory.
  const int64_t useful = static_cast<int64_t>(cfg.max_num_seqs) * ((max_len + g.block_size - 1) / g.block_size);
  n_blocks = static_cast<int32_t>(std::min<int64_t>(n_blocks, useful));
  kv_storage = std::make_unique<KvStorage>(m.backend(), g, n_blocks);
  kv = std::make_unique<KvCacheManager>(n_blocks, g.block_size, cfg.prefix_caching);
  SchedulerConfig sc;
  sc.max_batched_tokens = cfg.max_batched_tokens;
  sc.max_num_seqs = cfg.max_num_seqs;
  sc.static_batching = cfg.static_batching;
  scheduler = std::make_unique<Scheduler>(sc, *kv);
  log_info("KV cache: ", n_blocks, " blocks of ", g.block_size, " tokens (", kv_storage->bytes() >> 20, " MiB, ",
           std::string(type_name(g.type)), "), prefix caching ", cfg.prefix_caching ? "on" : "off",
           ", max model length ", max_len);
  update_stats();
}

Engine::Engine(Model& model, const EngineConfig& config) : model_(model), config_(config) {
  if (config.max_batched_tokens < 1 || config.max_num_seqs < 1 || config.block_size < 1 || config.block_size > 32)
    STRATA_THROW("invalid engine configuration (max_batched_tokens, max_num_seqs >= 1, block_size in [1, 32])");
  impl_ = std::make_unique<Impl>(*this, model, config);
}

Engine::~Engine() {
  impl_->stop = true;
  impl_->cv.notify_all();
  if (impl_->loop.joinable()) impl_->loop.join();
}

int64_t Engine::max_model_len() const { return impl_->max_len; }

int64_t Engine::capacity_tokens() const {
  return std::min<int64_t>(impl_->max_len, static_cast<int64_t>(impl_->kv->pool().n_total()) * config_.block_size);
}

SubmitResult Engine::submit(RequestParams p, EventCallback on_event) {
  const int32_t n_vocab = static_cast<int32_t>(model_.config().n_vocab);
  if (p.prompt.empty()) STRATA_THROW("the prompt is empty");
  for (int32_t t : p.prompt)
    if (t < 0 || t >= n_vocab) STRATA_THROW("prompt token id ", t, " is outside the vocabulary [0, ", n_vocab, ")");
  if (p.n < 1 || p.n > 128) STRATA_THROW("n must be in [1, 128], got ", p.n);
  if (p.stop.max_tokens < 1) STRATA_THROW("max_tokens must be at least 1, got ", p.stop.max_tokens);
  if (p.top_logprobs > 20) STRATA_THROW("top_logprobs must be at most 20, got ", p.top_logprobs);
  p.sampling.validate(n_vocab);
  const int64_t total = static_cast<int64_t>(p.prompt.size()) + p.stop.max_tokens;
  if (total > impl_->max_len)
    STRATA_THROW("this model's maximum context length is ", impl_->max_len, " tokens, but ", total,
                 " were requested (", p.prompt.size(), " in the prompt, ", p.stop.max_tokens, " to generate)");
  // With a sliding window a sequence holds at most the window, one chunk and a partial block.
  const int64_t window = impl_->model.config().sliding_window;
  const int64_t held =
      window > 0 ? std::min<int64_t>(total, window + config_.max_batched_tokens + config_.block_size) : total;
  if (impl_->kv->blocks_for(held) > impl_->kv->pool().n_total())
    STRATA_THROW("the request needs ", total, " tokens of KV cache but the whole cache holds ",
                 static_cast<int64_t>(impl_->kv->pool().n_total()) * config_.block_size);
  if (!impl_->accepting) return {SubmitStatus::ShuttingDown, 0};
  auto r = std::make_unique<RequestState>();
  r->params = std::move(p);
  r->on_event = std::move(on_event);
  r->arrival = Clock::now();
  r->prefix_root = prefix_root_hash({config_.model_name, r->params.cache_salt});
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->n_queued.load() >= config_.max_queue) return {SubmitStatus::QueueFull, 0};
  r->id = impl_->next_id++;
  const RequestId id = r->id;
  impl_->inbox.push_back(std::move(r));
  ++impl_->n_queued;
  impl_->cv.notify_all();
  return {SubmitStatus::Accepted, id};
}

void Engine::abort(RequestId id) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->abort_inbox.push_back(id);
  impl_->cv.notify_all();
}

std::unique_ptr<Sequence> Engine::Impl::make_sequence(RequestState& r, int32_t index) {
  auto s = std::make_unique<Sequence>();
  s->request = &r;
  s->index = index;
  SamplingParams sp = r.params.sampling;
  if (sp.seed) sp.seed = *sp.seed + static_cast<uint64_t>(index);
  s->sampler = std::make_unique<Sampler>(sp, static_cast<int32_t>(model.config().n_vocab));
  s->sampler->set_prompt(r.params.prompt);
  const Tokenizer& tok = model.tokenizer();
  const bool after_bos = r.params.prompt.size() == 1 && r.params.prompt[0] == tok.bos();
  s->detok = std::make_unique<StreamingDetokenizer>(tok, after_bos);
  s->stop = std::make_unique<StopMatcher>(r.params.stop.stop_strings);
  return s;
}

void Engine::Impl::drain_inbox() {
  std::vector<std::unique_ptr<RequestState>> fresh;
  std::vector<RequestId> aborts;
  {
    std::lock_guard<std::mutex> lock(mu);
    fresh.swap(inbox);
    aborts.swap(abort_inbox);
  }
  for (auto& r : fresh) {
    auto seq = make_sequence(*r, 0);
    seq->tokens = r->params.prompt;
    seq->n_prompt = static_cast<int64_t>(seq->tokens.size());
    scheduler->add_waiting(seq.get());
    r->seqs.push_back(std::move(seq));
    const RequestId id = r->id;
    requests.emplace(id, std::move(r));
  }
  for (RequestId id : aborts) {
    auto it = requests.find(id);
    if (it != requests.end()) abort_request(*it->second, FinishReason::Abort, "");
  }
}

void Engine::Impl::abort_request(RequestState& r, FinishReason reason, const std::string& error) {
  r.aborted = true;
  for (auto& s : r.seqs)
    if (s->status != SequenceStatus::Finished) finish_sequence(*s, reason, "", {}, error);
}

bool Engine::Impl::step() {
  struct EraseAtExit {
    Impl& im;
    ~EraseAtExit() { im.erase_finished(); }
  } erase_at_exit{*this};
  drain_inbox();
  ScheduleOutput so = scheduler->schedule();
  EngineMetrics& m = engine.metrics_;
  if (!so.preempted.empty()) m.preemptions.add(static_cast<double>(so.preempted.size()));
  if (so.prefix_queried_tokens) m.prefix_cache_queries.add(static_cast<double>(so.prefix_queried_tokens));
  if (so.prefix_hit_tokens) m.prefix_cache_hits.add(static_cast<double>(so.prefix_hit_tokens));
  {
    std::lock_guard<std::mutex> lock(stats_mu);
    stats.preemptions += static_cast<int64_t>(so.preempted.size());
    stats.prefix_queries += so.prefix_queried_tokens;
    stats.prefix_hits += so.prefix_hit_tokens;
  }
  const auto now = Clock::now();
  for (Sequence* s : so.admitted) {
    RequestState& r = *s->request;
    if (!r.first_scheduled) {
      r.first_scheduled = now;
      m.request_queue_time.observe(seconds(now - r.arrival));
      --n_queued;
    }
  }
  if (so.empty()) {
    update_stats();
    return scheduler->n_waiting() + scheduler->n_running() > 0;
  }
  try {
    execute(so);
  } catch (const std::exception& e) {
    // The batch failed as a whole: its requests fail, and none of their blocks are published.
    log_error("step failed: ", e.what());
    std::vector<RequestState*> failed;
    for (const ScheduledChunk& c : so.chunks) failed.push_back(c.seq->request);
    for (RequestState* r : failed)
      if (!r->aborted) abort_request(*r, FinishReason::Error, "internal error while running the model");
    update_stats();
    return true;
  }
  process_outputs(so);
  update_stats();
  {
    std::lock_guard<std::mutex> lock(stats_mu);
    ++stats.steps;
  }
  return true;
}

void Engine::Impl::execute(const ScheduleOutput& so) {
  for (const BlockCopy& c : so.copies)
    for (int32_t il = 0; il < kv_storage->geometry().n_layer; ++il)
      model.backend().copy_kv_block(kv_storage->layer(il), c.src, c.dst);
  batch.clear();
  for (const ScheduledChunk& c : so.chunks) {
    Sequence& s = *c.seq;
    const int32_t seq_index = static_cast<int32_t>(batch.block_tables.size());
    batch.block_tables.push_back(&s.kv.blocks);
    for (int64_t i = 0; i < c.n_tokens; ++i) {
      const int64_t pos = s.n_computed + i;
      const bool last = pos + 1 == static_cast<int64_t>(s.tokens.size());
      batch.add(s.tokens[static_cast<size_t>(pos)], static_cast<int32_t>(pos), seq_index, last);
    }
  }
  logits.resize(static_cast<size_t>(batch.n_outputs() * model.config().n_vocab));
  model.forward(batch, *kv_storage, logits.data());
}

void Engine::Impl::process_outputs(const ScheduleOutput& so) {
  const int64_t n_vocab = model.config().n_vocab;
  int64_t row = 0;
  // Chunks of sequences finished by an earlier chunk's processing (never happens within one
  // request's own chunks) are all still valid here: finishing only removes from the scheduler.
  for (const ScheduledChunk& c : so.chunks) {
    Sequence& s = *c.seq;
    s.n_computed += c.n_tokens;
    engine.metrics_.prompt_tokens.add(
        static_cast<double>(std::max<int64_t>(0, std::min(s.n_computed, s.n_prompt) - (s.n_computed - c.n_tokens))));
    kv->publish(s.kv, s.tokens, s.n_computed, s.request->prefix_root);
    // Sliding-window attention (every layer): blocks no later query can reach are given back,
    // so a long generation holds about window / block_size blocks.
    if (const int64_t w = model.config().sliding_window; w > 0) kv->drop_before(s.kv, s.n_computed + 1 - w);
    if (s.n_computed != static_cast<int64_t>(s.tokens.size())) continue;  // mid-prompt chunk
    const float* row_logits = logits.data() + row++ * n_vocab;
    if (s.status == SequenceStatus::Finished) continue;
    if (s.index == 0 && s.n_generated() == 0 && s.request->params.n > 1 && s.request->seqs.size() == 1)
      fork_children(s);
    RequestState& r = *s.request;
    if (s.index == 0 && s.n_generated() == 0) {
      for (auto& child : r.seqs)
        if (child.get() != &s && child->n_generated() == 0) sample_and_emit(*child, row_logits);
    }
    sample_and_emit(s, row_logits);
  }
}

void Engine::Impl::fork_children(Sequence& parent) {
  RequestState& r = *parent.request;
  for (int32_t i = 1; i < r.params.n; ++i) {
    auto child = make_sequence(r, i);
    child->tokens = parent.tokens;
    child->n_prompt = parent.n_prompt;
    child->n_computed = parent.n_computed;
    kv->fork(parent.kv, child->kv);
    scheduler->add_running(child.get());
    r.seqs.push_back(std::move(child));
  }
}

void Engine::Impl::sample_and_emit(Sequence& s, const float* row_logits) {
  RequestState& r = *s.request;
  const StopConditions& stop = r.params.stop;
  const int32_t n_vocab = static_cast<int32_t>(model.config().n_vocab);
  const int32_t token = s.sampler->sample(row_logits);
  const auto now = Clock::now();
  EngineMetrics& m = engine.metrics_;
  m.generation_tokens.add();
  if (!r.first_token) {
    r.first_token = now;
    m.time_to_first_token.observe(seconds(now - r.arrival));
  } else if (s.last_token_time) {
    m.inter_token_latency.observe(seconds(now - *s.last_token_time));
  }
  s.last_token_time = now;

  TokenOutput out;
  out.token = token;
  if (r.params.top_logprobs >= 0) {
    out.logprob = token_logprob(row_logits, n_vocab, token);
    out.top = top_logprobs(row_logits, n_vocab, r.params.top_logprobs);
  }
  const bool eog = !stop.ignore_eos && model.tokenizer().is_eog(token);
  const bool stop_token =
      std::find(stop.stop_token_ids.begin(), stop.stop_token_ids.end(), token) != stop.stop_token_ids.end();
  s.sampler->accept(token);
  s.tokens.push_back(token);
  if (eog || stop_token) {
    // The stop token itself is not text of the completion.
    std::string text = s.stop->push(s.detok->finish());
    text += s.stop->flush();
    finish_sequence(s, FinishReason::Stop, std::move(text), {out});
    return;
  }
  out.piece = model.tokenizer().token_to_piece(token);
  std::string text = s.stop->push(s.detok->push(token));
  FinishReason finish = FinishReason::None;
  if (s.stop->stopped()) finish = FinishReason::Stop;
  else if (s.n_generated() >= stop.max_tokens || static_cast<int64_t>(s.tokens.size()) >= max_len)
    finish = FinishReason::Length;
  if (finish == FinishReason::Length) {
    text += s.stop->push(s.detok->finish());
    if (s.stop->stopped()) finish = FinishReason::Stop;
    text += s.stop->flush();
  }
  if (finish != FinishReason::None) {
    finish_sequence(s, finish, std::move(text), {out});
    return;
  }
  EngineEvent ev;
  ev.id = r.id;
  ev.index = s.index;
  ev.text = std::move(text);
  ev.tokens.push_back(std::move(out));
  r.on_event(ev);
}

void Engine::Impl::finish_sequence(Sequence& s, FinishReason reason, std::string text, std::vector<TokenOutput> tokens,
                                   const std::string& error) {
  RequestState& r = *s.request;
  if (s.status == SequenceStatus::Waiting && !r.first_scheduled) --n_queued;
  scheduler->remove(&s);
  kv->free(s.kv);
  s.status = SequenceStatus::Finished;
  ++r.n_finished;
  EngineEvent ev;
  ev.id = r.id;
  ev.index = s.index;
  ev.text = std::move(text);
  ev.tokens = std::move(tokens);
  ev.finish = reason;
  ev.error = error;
  // Children fork when the prompt is done; a request that fails or is aborted before then
  // has only its first sequence.
  const bool failed = reason == FinishReason::Abort || reason == FinishReason::Error;
  const bool done = r.n_finished == static_cast<int32_t>(r.seqs.size()) &&
                    (static_cast<int32_t>(r.seqs.size()) == r.params.n || failed);
  EngineMetrics& m = engine.metrics_;
  if (done) {
    ev.request_done = true;
    ev.usage.prompt_tokens = static_cast<int64_t>(r.params.prompt.size());
    ev.usage.cached_prompt_tokens = r.cached_prompt_tokens;
    for (const auto& q : r.seqs) ev.usage.completion_tokens += q->n_generated();
    m.e2e_request_latency.observe(seconds(Clock::now() - r.arrival));
    if (failed) m.requests_aborted.add();
    else m.requests_finished.add();
  }
  r.on_event(ev);
  if (done) finished_requests.push_back(r.id);
}

void Engine::Impl::update_stats() {
  EngineMetrics& m = engine.metrics_;
  const BlockPool& pool = kv->pool();
  int64_t allocated = 0, filled = 0;
  for (Sequence* s : scheduler->running()) {
    const int64_t dropped = static_cast<int64_t>(s->kv.n_dropped) * kv->block_size();
    allocated += static_cast<int64_t>(s->kv.blocks.size()) * kv->block_size() - dropped;
    filled +=
        std::min<int64_t>(s->n_computed, static_cast<int64_t>(s->kv.blocks.size()) * kv->block_size()) - dropped;
  }
  const double waste = allocated > 0 ? static_cast<double>(allocated - filled) / static_cast<double>(allocated) : 0.0;
  m.num_requests_running.set(static_cast<double>(scheduler->n_running()));
  m.num_requests_waiting.set(static_cast<double>(scheduler->n_waiting()) + static_cast<double>(inbox.size()));
  m.kv_cache_usage.set(pool.n_total() ? static_cast<double>(pool.n_used()) / pool.n_total() : 0.0);
  m.kv_cache_waste.set(waste);
  m.kv_blocks_free.set(pool.n_free());
  const size_t block_bytes = kv_storage->geometry().bytes_per_block();
  m.kv_block_bytes.set(static_cast<double>(block_bytes));
  m.kv_total_bytes.set(static_cast<double>(kv_storage->bytes()));
  m.kv_used_bytes.set(static_cast<double>(block_bytes) * pool.n_used());
  std::lock_guard<std::mutex> lock(stats_mu);
  stats.running = static_cast<int32_t>(scheduler->n_running());
  stats.waiting = static_cast<int32_t>(scheduler->n_waiting());
  stats.kv_blocks_total = pool.n_total();
  stats.kv_blocks_used = pool.n_used();
  stats.kv_blocks_cached = pool.n_cached_free();
  stats.kv_block_bytes = block_bytes;
  stats.kv_bytes_total = kv_storage->bytes();
  stats.kv_waste = waste;
}

bool Engine::step() { return impl_->step(); }

void Engine::run_until_idle() {
  while (impl_->step()) {
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
        im.cv.wait(lock, [&] {
          return im.stop || !im.inbox.empty() || !im.abort_inbox.empty() ||
                 im.scheduler->n_waiting() + im.scheduler->n_running() > 0;
        });
      }
      if (im.stop) break;
      im.step_started_ns = Clock::now().time_since_epoch().count();
      try {
        im.step();
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
  std::vector<RequestState*> left;
  for (auto& [id, r] : impl_->requests) left.push_back(r.get());
  for (RequestState* r : left) impl_->abort_request(*r, FinishReason::Abort, "server shutting down");
  impl_->erase_finished();
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
