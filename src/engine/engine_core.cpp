#include "engine/engine_core.h"

#include <algorithm>
#include <fstream>

#include "core/check.h"
#include "core/log.h"
#include "engine/kv_fingerprint.h"
#include "engine/spec/model_drafter.h"
#include "engine/spec/ngram_drafter.h"
#include "engine/spec/skip_layer_drafter.h"
#include "engine/spec/suffix_drafter.h"
#include "kv/disk_tier.h"
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

// Attention sinks + window: what the engine can run them with.
void validate_kv_window(const EngineConfig& cfg, const KvGeometry& g) {
  const KvWindowPolicy& kw = cfg.kv_window;
  kw.validate(g.block_size);
  if (!kw.enabled()) return;
  if (g.v_in_k)
    STRATA_THROW("--kv-window / --kv-sinks are not supported with multi-head latent attention (MLA)");
  for (const DraftMethodSpec& mth : cfg.spec.methods)
    if (is_model_method(mth.method))
      STRATA_THROW("--kv-window / --kv-sinks do not combine with model-based speculative decoding (",
                   mth.name(), "): only ngram and suffix drafting");
}

// Score-based eviction: what the engine can run it with (kv_evict_policy.h).
void validate_kv_evict(const EngineConfig& cfg, const KvGeometry& g, const ModelConfig& mc) {
  const KvEvictPolicy& ke = cfg.kv_evict;
  ke.validate();
  if (!ke.enabled()) return;
  if (cfg.kv_window.enabled()) STRATA_THROW("--kv-evict does not combine with --kv-window / --kv-sinks");
  if (g.v_in_k) STRATA_THROW("--kv-evict is not supported with multi-head latent attention (MLA)");
  if (g.staged())
    STRATA_THROW("--kv-evict does not work with KIVI cache types (a block is quantized as a whole)");
  for (int64_t il = 0; il < mc.n_layer; ++il)
    if (mc.window(il) > 0) STRATA_THROW("--kv-evict is not supported for models with sliding-window layers");
  for (const DraftMethodSpec& mth : cfg.spec.methods)
    if (is_model_method(mth.method))
      STRATA_THROW("--kv-evict does not combine with model-based speculative decoding (", mth.name(),
                   "): only ngram and suffix drafting");
  if (ke.during_generation() && cfg.spec.enabled())
    STRATA_THROW(
        "--kv-evict h2o (which evicts during generation) does not combine with speculative decoding");
}

}  // namespace

EngineCore::EngineCore(Model& m, const EngineConfig& cfg, EngineMetrics& metrics)
    : model_(m), config_(cfg), metrics_(metrics) {
  const ModelConfig& mc = m.config();
  max_len_ = cfg.max_model_len > 0     ? std::min<int64_t>(cfg.max_model_len, int64_t{1} << 24)
             : cfg.kv_window.enabled() ? std::max<int64_t>(mc.n_ctx_train, kWindowedMaxModelLen)
                                       : mc.n_ctx_train;
  validate_spec_config(cfg.spec);
  const KvGeometry g = m.kv_geometry(cfg.kv_type, cfg.block_size);
  validate_kv_window(cfg, g);
  validate_kv_evict(cfg, g, mc);
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
    const int64_t held =
        cfg.kv_window.enabled()
            ? std::min(max_len_, cfg.kv_window.max_held_tokens(cfg.max_batched_tokens, g.block_size))
            : max_len_;
    const int64_t useful =
        static_cast<int64_t>(cfg.max_num_seqs) * ((held + g.block_size - 1) / g.block_size);
    n_blocks = std::min(n_blocks, useful);
  }
  const auto nb = static_cast<int32_t>(std::clamp<int64_t>(n_blocks, 1, INT32_MAX / 2));
  target_ = std::make_unique<ModelExecutor>(m, g, nb);
  for (const auto& d : drafters_) d->allocate_kv(nb, target_->kv());
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
  sc.kv_window = cfg.kv_window;
  setup_offload(g);
  scheduler_ = std::make_unique<Scheduler>(sc, *kv_);
  mask_.assign(static_cast<size_t>(mc.n_vocab), 1);
  log_info("KV cache: ", nb, " blocks of ", g.block_size, " tokens (",
           (per_block * static_cast<size_t>(nb)) >> 20, " MiB, ", std::string(type_name(g.type)),
           "), prefix caching ", cfg.prefix_caching ? "on" : "off", ", max model length ", max_len_);
  if (cfg.kv_window.enabled())
    log_info("KV window: the first ", cfg.kv_window.sinks, " tokens (attention sinks) and the last ",
             cfg.kv_window.window, " of every sequence");
  if (const KvEvictPolicy& ke = cfg.kv_evict; ke.enabled())
    log_info("KV eviction (", kv_evict_method_name(ke.method), "): prompts longer than ",
             ke.budget + ke.window, " tokens keep ", ke.budget,
             ke.method == KvEvictMethod::Recent ? " more" : " best-scored", " tokens and the last ",
             ke.window, ke.during_generation() ? ", again every block during generation" : "");
  // The adaptive controller's step costs are measured now, before any request waits on them.
  if (cfg.spec.enabled() && cfg.spec.adaptive) calibrate_cost_model();
  if (cfg.spec.enabled()) {
    std::string chain;
    for (const auto& mth : cfg.spec.methods) chain += (chain.empty() ? "" : ",") + mth.name();
    log_info("speculative decoding: ", chain, ", draft ", cfg.spec.draft_min, "..", cfg.spec.draft_max,
             " tokens, p_min ", cfg.spec.draft_p_min, cfg.spec.adaptive ? ", adaptive" : "");
  }
}

EngineCore::~EngineCore() = default;

void EngineCore::setup_offload(const KvGeometry& g) {
  if (config_.kv_offload_mem == 0 && config_.kv_offload_dir.empty()) return;
  const char* why_not = nullptr;
  if (!config_.prefix_caching) why_not = "prefix caching is off";
  if (g.staged()) why_not = "KIVI cache types keep blocks partly outside their tiles";
  for (const auto& d : drafters_)
    if (d->kv_bytes_per_block() > 0) why_not = "a draft model's KV would not be restored with the target's";
  if (why_not) {
    log_warn("KV offloading is off: ", why_not);
    return;
  }
  std::unique_ptr<KvTier> disk;
  if (!config_.kv_offload_dir.empty())
    disk = std::make_unique<DiskTier>(config_.kv_offload_dir, config_.kv_offload_disk,
                                      kv_fingerprint(model_, g, config_.kv_window), g.bytes_per_block());
  offload_ = std::make_unique<KvOffload>(target_->kv(), config_.kv_offload_mem, std::move(disk));
  kv_->set_offload(offload_.get());
  log_info("KV offloading: host ", config_.kv_offload_mem >> 20, " MiB",
           config_.kv_offload_dir.empty() ? std::string()
                                          : ", disk " + config_.kv_offload_dir + " (" +
                                                std::to_string(config_.kv_offload_disk >> 20) + " MiB)");
}

void EngineCore::sync_offload_metrics() {
  if (!offload_) return;
  auto sync = [](const TierStats* st, TierTotals& seen, EngineMetrics::Tier& m) {
    if (!st) return;
    auto add = [](int64_t now, int64_t& was, Counter& c, double scale) {
      if (now > was) c.add(static_cast<double>(now - was) * scale);
      was = now;
    };
    add(st->hits, seen.hits, m.hits, 1.0);
    add(st->bytes_read, seen.bytes_read, m.read_bytes, 1.0);
    add(st->bytes_written, seen.bytes_written, m.written_bytes, 1.0);
    add(st->read_ns, seen.read_ns, m.read_seconds, 1e-9);
    add(st->write_ns, seen.write_ns, m.write_seconds, 1e-9);
    m.stored_bytes.set(static_cast<double>(st->bytes_stored.load()));
  };
  sync(offload_->host_stats(), host_seen_, metrics_.offload_host);
  sync(offload_->disk_stats(), disk_seen_, metrics_.offload_disk);
  if (const TierStats* d = offload_->disk_stats()) {
    if (d->rejected > disk_seen_.rejected)
      metrics_.offload_rejected.add(static_cast<double>(d->rejected - disk_seen_.rejected));
    if (d->dropped > disk_seen_.dropped)
      metrics_.offload_dropped.add(static_cast<double>(d->dropped - disk_seen_.dropped));
    disk_seen_.rejected = d->rejected;
    disk_seen_.dropped = d->dropped;
  }
}

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
  SpecConfig sc = strata::resolve_spec(config_.spec, request);
  if (sc.enabled() && config_.kv_evict.during_generation())
    STRATA_THROW(
        "--kv-evict h2o (which evicts during generation) does not combine with speculative decoding");
  return sc;
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
  if (const int64_t at =
          r->params.kv_evict_at < 0 ? seq->n_prompt : std::min(r->params.kv_evict_at, seq->n_prompt);
      config_.kv_evict.applies(at) && r->params.pooling == Pooling::None)
    seq->evict_at = at;
  if (const KvEvictPolicy& ke = config_.kv_evict; ke.enabled()) {
    seq->evict_track =
        ke.during_generation() && r->params.pooling == Pooling::None && r->params.stop.max_tokens > 0;
    seq->evict_from = ke.method == KvEvictMethod::SnapKv ? seq->evict_at - ke.window
                      : ke.method == KvEvictMethod::H2O  ? 0
                                                         : std::max<int64_t>(0, seq->evict_at - 1);
  }
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
    ~EraseAtExit() {
      c.erase_finished();
      c.sync_offload_metrics();
    }
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
    filled += std::min<int64_t>(s->n_computed - s->kv.pos_offset,
                                static_cast<int64_t>(s->kv.blocks.size()) * kv_->block_size()) -
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
