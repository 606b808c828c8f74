#include "engine/engine_core.h"

#include <algorithm>
#include <fstream>

#include "core/check.h"
#include "core/log.h"
#include "engine/spec/model_drafter.h"
#include "engine/spec/ngram_drafter.h"
#include "engine/spec/skip_layer_drafter.h"
#include "engine/spec/suffix_drafter.h"
#include "kv/prefix_hash.h"

namespace strata {
namespace {

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

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

bool is_model_method(DraftMethod m) {
  return m != DraftMethod::Ngram && m != DraftMethod::Suffix;
}

}  // namespace

EngineCore::EngineCore(Model& m, const EngineConfig& cfg, EngineMetrics& metrics)
    : model_(m), config_(cfg), metrics_(metrics) {
  const ModelConfig& mc = m.config();
  max_len_ = cfg.max_model_len > 0 ? std::min<int64_t>(cfg.max_model_len, int64_t{1} << 24) : mc.n_ctx_train;
  validate_spec_config(cfg.spec);
  const KvGeometry g = m.kv_geometry(cfg.kv_type, cfg.block_size);
  build_drafters();
  // Each block holds the target's K/V and every model drafter's, under the same id.
  size_t per_block = g.bytes_per_block();
  for (const auto& d : drafters_) per_block += d->kv_bytes_per_block();
  int64_t n_blocks = 0;
  if (cfg.kv_cache_tokens > 0) {
    n_blocks = (cfg.kv_cache_tokens + g.block_size - 1) / g.block_size;
  } else {
    size_t bytes = cfg.kv_cache_bytes;
    if (bytes == 0)
      bytes = static_cast<size_t>(static_cast<double>(available_memory()) * cfg.kv_cache_fraction);
    n_blocks = static_cast<int64_t>(std::clamp<size_t>(bytes / per_block, 1, INT32_MAX / 2));
    // More blocks than max_num_seqs full-length sequences can use would only waste memory.
    const int64_t useful =
        static_cast<int64_t>(cfg.max_num_seqs) * ((max_len_ + g.block_size - 1) / g.block_size);
    n_blocks = std::min(n_blocks, useful);
  }
  const auto nb = static_cast<int32_t>(std::clamp<int64_t>(n_blocks, 1, INT32_MAX / 2));
  target_ = std::make_unique<ModelExecutor>(m, g, nb);
  for (const auto& d : drafters_) d->allocate_kv(nb);
  for (const DraftMethodSpec& mth : cfg.spec.methods) {
    if (mth.method != DraftMethod::SkipLayers) continue;
    std::vector<int32_t> calib;
    if (!cfg.spec.calibration_text.empty())
      calib = m.tokenizer().encode(cfg.spec.calibration_text, /*add_special=*/true, /*parse_special=*/false);
    drafters_.push_back(
        std::make_unique<SkipLayerDrafter>(mth, *target_, std::move(calib), cfg.spec.draft_max));
  }
  kv_ = std::make_unique<KvCacheManager>(nb, g.block_size, cfg.prefix_caching);
  SchedulerConfig sc;
  sc.max_batched_tokens = cfg.max_batched_tokens;
  sc.max_num_seqs = cfg.max_num_seqs;
  sc.static_batching = cfg.static_batching;
  scheduler_ = std::make_unique<Scheduler>(sc, *kv_);
  mask_.assign(static_cast<size_t>(mc.n_vocab), 1);
  log_info("KV cache: ", nb, " blocks of ", g.block_size, " tokens (",
           (per_block * static_cast<size_t>(nb)) >> 20, " MiB, ", std::string(type_name(g.type)),
           "), prefix caching ", cfg.prefix_caching ? "on" : "off", ", max model length ", max_len_);
  if (cfg.spec.enabled()) {
    std::string chain;
    for (const auto& mth : cfg.spec.methods) chain += (chain.empty() ? "" : ",") + mth.name();
    log_info("speculative decoding: ", chain, ", draft ", cfg.spec.draft_min, "..", cfg.spec.draft_max,
             " tokens, p_min ", cfg.spec.draft_p_min, cfg.spec.adaptive ? ", adaptive" : "");
  }
}

EngineCore::~EngineCore() = default;

void EngineCore::build_drafters() {
  // The cheap drafters are always there (a request may ask for them); model drafters only as
  // configured, since they load weights.
  drafters_.push_back(std::make_unique<NgramDrafter>());
  drafters_.push_back(std::make_unique<SuffixDrafter>());
  for (const DraftMethodSpec& mth : config_.spec.methods) {
    if (!is_model_method(mth.method)) continue;
    if (mth.method == DraftMethod::SkipLayers) continue;  // needs the target executor: built lazily
    drafters_.push_back(std::make_unique<ModelDrafter>(mth, model_, config_.block_size, config_.kv_type));
  }
}

Drafter* EngineCore::drafter_for(const DraftMethodSpec& m) const {
  for (const auto& d : drafters_)
    if (d->method() == m || (!is_model_method(m.method) && d->method().method == m.method)) return d.get();
  return nullptr;
}

SpecConfig EngineCore::resolve_spec(const std::optional<SpecOverride>& request) const {
  return strata::resolve_spec(config_.spec, request);
}

std::unique_ptr<Sequence> EngineCore::make_sequence(RequestState& r, int32_t index) {
  auto s = std::make_unique<Sequence>();
  s->uid = next_uid_++;
  s->request = &r;
  s->index = index;
  SamplingParams sp = r.params.sampling;
  if (sp.seed) sp.seed = *sp.seed + static_cast<uint64_t>(index);
  s->sampler = std::make_unique<Sampler>(sp, static_cast<int32_t>(model_.config().n_vocab));
  s->sampler->set_prompt(r.params.prompt);
  const Tokenizer& tok = model_.tokenizer();
  const bool after_bos = r.params.prompt.size() == 1 && r.params.prompt[0] == tok.bos();
  s->detok = std::make_unique<StreamingDetokenizer>(tok, after_bos);
  s->stop = std::make_unique<StopMatcher>(r.params.stop.stop_strings);
  if (r.params.constraint) s->constraint = r.params.constraint->make();
  if (r.params.pooling != Pooling::None)
    s->pool = std::make_unique<EmbeddingPool>(r.params.pooling, model_.config().n_embd,
                                              static_cast<int64_t>(r.params.prompt.size()));
  return s;
}

void EngineCore::add_request(std::unique_ptr<RequestState> r) {
  r->prefix_root = prefix_root_hash({config_.model_name, r->params.cache_salt});
  r->partition = r->params.cache_salt + '\x1f' + r->params.tenant;
  auto seq = make_sequence(*r, 0);
  seq->tokens = r->params.prompt;
  seq->n_prompt = static_cast<int64_t>(seq->tokens.size());
  scheduler_->add_waiting(seq.get());
  r->seqs.push_back(std::move(seq));
  const RequestId id = r->id;
  requests_.emplace(id, std::move(r));
  ++n_unscheduled_;
}

void EngineCore::abort(RequestId id, FinishReason reason, const std::string& error) {
  auto it = requests_.find(id);
  if (it != requests_.end()) abort_request(*it->second, reason, error);
}

void EngineCore::abort_all(FinishReason reason, const std::string& error) {
  std::vector<RequestState*> left;
  for (auto& [id, r] : requests_) left.push_back(r.get());
  for (RequestState* r : left) abort_request(*r, reason, error);
  erase_finished();
}

void EngineCore::abort_request(RequestState& r, FinishReason reason, const std::string& error) {
  if (r.aborted) return;
  r.aborted = true;
  for (auto& s : r.seqs) {
    if (s->status == SequenceStatus::Finished) continue;
    EngineEvent ev;
    ev.error = error;
    finish_sequence(*s, reason, std::move(ev));
  }
}

void EngineCore::erase_finished() {
  for (RequestId id : finished_) requests_.erase(id);
  finished_.clear();
}

bool EngineCore::step() {
  struct EraseAtExit {
    EngineCore& c;
    ~EraseAtExit() { c.erase_finished(); }
  } erase_at_exit{*this};
  const auto t_start = Clock::now();
  plan_speculation();
  ScheduleOutput so = scheduler_->schedule();
  if (!so.preempted.empty()) metrics_.preemptions.add(static_cast<double>(so.preempted.size()));
  if (so.prefix_queried_tokens)
    metrics_.prefix_cache_queries.add(static_cast<double>(so.prefix_queried_tokens));
  if (so.prefix_hit_tokens) metrics_.prefix_cache_hits.add(static_cast<double>(so.prefix_hit_tokens));
  for (Sequence* s : so.preempted)
    for (const auto& d : drafters_) d->release(s->uid);
  const auto now = Clock::now();
  for (Sequence* s : so.admitted) {
    RequestState& r = *s->request;
    if (!r.first_scheduled) {
      r.first_scheduled = now;
      --n_unscheduled_;
      metrics_.request_queue_time.observe(seconds(now - r.arrival));
    }
  }
  if (so.empty()) return has_work();
  try {
    draft_with_models(so);
    metrics_.draft_seconds.add(seconds(Clock::now() - t_start));  // planning, scheduling and drafting
    execute(so);
  } catch (const std::exception& e) {
    // The batch failed as a whole: its requests fail, and none of their blocks are published.
    log_error("step failed: ", e.what());
    std::vector<RequestState*> failed;
    for (const ScheduledChunk& c : so.chunks) failed.push_back(c.seq->request);
    for (RequestState* r : failed)
      abort_request(*r, FinishReason::Error, "internal error while running the model");
    return true;
  }
  process_outputs(so);
  metrics_.step_seconds.add(seconds(Clock::now() - t_start));
  return true;
}

void EngineCore::fill_stats(EngineStats& st) const {
  const BlockPool& pool = kv_->pool();
  int64_t allocated = 0, filled = 0;
  for (Sequence* s : scheduler_->running()) {
    const int64_t dropped = static_cast<int64_t>(s->kv.n_dropped) * kv_->block_size();
    allocated += static_cast<int64_t>(s->kv.blocks.size()) * kv_->block_size() - dropped;
    filled +=
        std::min<int64_t>(s->n_computed, static_cast<int64_t>(s->kv.blocks.size()) * kv_->block_size()) -
        dropped;
  }
  st.running = static_cast<int32_t>(scheduler_->n_running());
  st.waiting = static_cast<int32_t>(scheduler_->n_waiting());
  st.kv_blocks_total = pool.n_total();
  st.kv_blocks_used = pool.n_used();
  st.kv_blocks_cached = pool.n_cached_free();
  st.kv_block_bytes = target_->kv().geometry().bytes_per_block();
  st.kv_bytes_total = target_->kv().bytes();
  st.kv_waste =
      allocated > 0 ? static_cast<double>(allocated - filled) / static_cast<double>(allocated) : 0.0;
}

}  // namespace strata
