#include "model/model.h"

#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/log.h"
#include "model/decoder_blocks.h"
#include "model/forward_scratch.h"
#include "model/layer_weights.h"

namespace strata {

const char* OpProfile::name(int op) {
  static const char* const kNames[] = {"embed",     "norm",        "matmul", "rope",
                                       "attention", "elementwise", "output", "moe"};
  return op >= 0 && op < kNumOps ? kNames[op] : "?";
}

Model::Model(std::unique_ptr<ModelFile> file, Backend& backend, const ModelLoadOptions& options)
    : file_(std::move(file)), backend_(backend), options_(options) {}

Model::~Model() = default;

std::unique_ptr<Model> Model::load(const std::string& path, Backend& backend,
                                   const ModelLoadOptions& options) {
  return load(open_model_file(path, options.tokenizer_path), backend, options);
}

std::unique_ptr<Model> Model::load(std::unique_ptr<ModelFile> file, Backend& backend,
                                   const ModelLoadOptions& options) {
  STRATA_CHECK(options.n_ctx >= 0);
  std::unique_ptr<Model> m(new Model(std::move(file), backend, options));
  m->config_ = ModelConfig::from_metadata(m->file_->metadata());
  m->tokenizer_ = Tokenizer::from_metadata(m->file_->metadata());
  m->bind_weights();
  return m;
}

KvGeometry Model::kv_geometry(const KvCacheType& kv_type, int32_t block_size) const {
  KvGeometry g;
  g.n_layer = static_cast<int32_t>(config_.n_layer);
  g.n_head_kv = static_cast<int32_t>(config_.n_head_kv);
  g.head_dim = static_cast<int32_t>(config_.head_dim);
  g.head_dim_v = static_cast<int32_t>(config_.head_dim_v);
  // MLA: the cached latent row is both the key and (its first kv_lora_rank values) the value.
  g.v_in_k = config_.info->mla;
  g.block_size = block_size;
  g.type = kv_type;
  return g;
}

size_t Model::weight_bytes() const {
  size_t total = output_->weight_bytes();
  auto add = [&](const BackendMatrix* m) { total += m ? m->weight_bytes() : 0; };
  auto add_experts = [&](const BackendMatrixStack* s, int64_t n) { total += s ? s->matrix_bytes() * n : 0; };
  for (const LayerWeights& L : layers_) {
    const AttentionWeights& a = L.attn;
    for (const BackendMatrix* m : {a.wq.get(), a.wk.get(), a.wv.get(), a.wqkv.get(), a.wo.get(), a.wq_a.get(),
                                   a.wq_b.get(), a.wkv_a.get()})
      add(m);
    add_experts(a.k_b.get(), config_.n_head);  // every head reads its matrix
    add_experts(a.v_b.get(), config_.n_head);
    const FfnWeights& f = L.ffn;
    for (const BackendMatrix* m : {f.gate.get(), f.up.get(), f.down.get(), f.router.get(), f.gate_shexp.get(),
                                   f.up_shexp.get(), f.down_shexp.get()})
      add(m);
    for (const BackendMatrixStack* s : {f.gate_exps.get(), f.up_exps.get(), f.down_exps.get()})
      add_experts(s, config_.moe.n_expert_used);
  }
  return total;
}

size_t Model::total_weight_bytes() const {
  size_t total = weight_bytes();
  for (const LayerWeights& L : layers_)
    for (const BackendMatrixStack* s : {L.ffn.gate_exps.get(), L.ffn.up_exps.get(), L.ffn.down_exps.get()})
      if (s) total += s->matrix_bytes() * static_cast<size_t>(s->n_mats() - config_.moe.n_expert_used);
  return total;
}

void Model::forward(const ForwardBatch& batch, const KvStorage& kv, float* logits, float* hidden) {
  const int64_t n = batch.n_tokens();
  STRATA_CHECK(batch.pos.size() == static_cast<size_t>(n) && batch.seq.size() == static_cast<size_t>(n) &&
               batch.want_logits.size() == static_cast<size_t>(n) &&
               (batch.want_hidden.empty() || batch.want_hidden.size() == static_cast<size_t>(n)));
  STRATA_CHECK(kv.geometry().n_layer == config_.n_layer && kv.geometry().n_head_kv == config_.n_head_kv &&
                   kv.geometry().head_dim == config_.head_dim,
               "KV storage does not match the model");
  if (n == 0) return;
  STRATA_CHECK(batch.rope_pos.empty() || batch.rope_pos.size() == static_cast<size_t>(n));
  STRATA_CHECK(batch.score_sinks.empty() || batch.score_sinks.size() == batch.block_tables.size());
  STRATA_CHECK(batch.score_sinks.empty() || !config_.info->mla,
               "KV eviction scores need grouped-query attention");
  const ModelConfig& c = config_;
  if (!scratch_ || scratch_->cap < n)
    scratch_ = ForwardScratch::create(backend_, c, std::max(n, scratch_ ? scratch_->cap : 0));
  ForwardScratch& s = *scratch_;

  AttentionBatch ab;
  ab.n_tokens = n;
  ab.pos = batch.pos.data();
  ab.seq = batch.seq.data();
  ab.slot = s.slots.data();
  const int32_t bs = kv.block_size();
  for (const auto* table : batch.block_tables) {
    STRATA_CHECK(table != nullptr);
    ab.block_tables.push_back(table->data());
    ab.n_blocks.push_back(static_cast<int32_t>(table->size()));
  }
  for (int64_t t = 0; t < n; ++t) {
    const int32_t p = ab.pos[t], sq = ab.seq[t];
    STRATA_CHECK(sq >= 0 && static_cast<size_t>(sq) < batch.block_tables.size(), "bad sequence index");
    STRATA_CHECK(p >= 0 && p / bs < ab.n_blocks[static_cast<size_t>(sq)], "position ", p, " has no KV block");
    const int32_t tok = batch.tokens[static_cast<size_t>(t)];
    STRATA_CHECK(tok >= 0 && tok < c.n_vocab, "token id ", tok, " out of range");
    s.slots[static_cast<size_t>(t)] =
        static_cast<int64_t>(ab.block_tables[static_cast<size_t>(sq)][p / bs]) * bs + p % bs;
  }

  OpTimer timed(profiling_, profile_);
  float* x = fp(s.x);
  timed(OpProfile::Embed, [&] {
    backend_.get_rows(*token_embd_, batch.tokens.data(), n, x);
    if (c.embd_scale != 1.0f) backend_.scale(x, n * c.n_embd, c.embd_scale);
  });
  STRATA_CHECK(!batch.skip_layers || batch.skip_layers->size() == static_cast<size_t>(c.n_layer));
  for (int64_t il = 0; il < c.n_layer; ++il) {
    if (batch.skip_layers && (*batch.skip_layers)[static_cast<size_t>(il)]) continue;
    run_layer(il, n, kv.layer(static_cast<int32_t>(il)), ab, batch);
  }

  // Only the rows whose logits or hidden states are wanted go through the final norm; hidden
  // rows are copied out after it, and only the logits rows go on through the output matrix.
  float* h = fp(s.h);
  const bool any_hidden = batch.n_hidden_outputs() > 0;
  auto wanted = [&](int64_t t) {
    return batch.want_logits[static_cast<size_t>(t)] ||
           (any_hidden && batch.want_hidden[static_cast<size_t>(t)]);
  };
  const size_t row_bytes = static_cast<size_t>(c.n_embd) * sizeof(float);
  int64_t n_norm = 0;
  for (int64_t t = 0; t < n; ++t) {
    if (!wanted(t)) continue;
    if (n_norm != t) std::memcpy(x + n_norm * c.n_embd, x + t * c.n_embd, row_bytes);
    ++n_norm;
  }
  if (n_norm == 0) return;
  timed(OpProfile::Norm, [&] { backend_.rms_norm(x, fp(output_norm_), h, n_norm, c.n_embd, c.rms_eps); });
  int64_t n_out = n_norm;
  if (any_hidden) {
    STRATA_CHECK(hidden != nullptr, "hidden rows wanted but no buffer given");
    int64_t row = 0, n_hidden = 0;
    n_out = 0;
    for (int64_t t = 0; t < n; ++t) {
      if (!wanted(t)) continue;
      if (batch.want_hidden[static_cast<size_t>(t)])
        std::memcpy(hidden + (n_hidden++) * c.n_embd, h + row * c.n_embd, row_bytes);
      if (batch.want_logits[static_cast<size_t>(t)]) {
        if (n_out != row) std::memcpy(h + n_out * c.n_embd, h + row * c.n_embd, row_bytes);
        ++n_out;
      }
      ++row;
    }
  }
  if (n_out == 0) return;
  timed(OpProfile::Output, [&] {
    backend_.matmul(*output_, h, logits, n_out);
    if (c.final_softcap > 0.0f) backend_.softcap(logits, n_out * c.n_vocab, c.final_softcap);
  });
}

// One layer: [norm] attention [post-norm] + residual, [norm] FFN or experts [post-norm] +
// residual, each norm where the architecture has it.
void Model::run_layer(int64_t il, int64_t n, const KvLayerView& kv, const AttentionBatch& ab,
                      const ForwardBatch& batch) {
  const ModelConfig& c = config_;
  const ArchInfo& arch = *c.info;
  const LayerWeights& L = layers_[static_cast<size_t>(il)];
  ForwardScratch& s = *scratch_;
  OpTimer timed(profiling_, profile_);
  BlockContext ctx{backend_, c, s, timed, n, ab, batch.kv_window};
  if (!batch.rope_pos.empty()) ctx.rope_pos = batch.rope_pos.data();
  if (!batch.score_sinks.empty()) ctx.score_sinks = &batch.score_sinks;
  float* x = fp(s.x);
  float* h = fp(s.h);
  float* o = fp(s.o);

  const float* attn_in = x;
  if (arch.attn_norm) {
    timed(OpProfile::Norm, [&] { backend_.rms_norm(x, fp(L.attn.norm), h, n, c.n_embd, c.rms_eps); });
    attn_in = h;
  }
  if (arch.mla)
    mla_block(ctx, L.attn, kv, attn_in, o);
  else
    attention_block(ctx, L.attn, il, kv, attn_in, o);
  if (arch.attn_post_norm)
    timed(OpProfile::Norm, [&] { backend_.rms_norm(o, fp(L.attn.post_norm), o, n, c.n_embd, c.rms_eps); });
  timed(OpProfile::Elementwise, [&] { backend_.add(x, o, n * c.n_embd); });

  const float* ffn_in = x;
  if (arch.ffn_norm) {
    timed(OpProfile::Norm, [&] { backend_.rms_norm(x, fp(L.ffn.norm), h, n, c.n_embd, c.rms_eps); });
    ffn_in = h;
  }
  if (c.is_moe_layer(il))
    moe_block(ctx, L.ffn, ffn_in, o);
  else
    ffn_block(ctx, L.ffn.gate.get(), *L.ffn.up, *L.ffn.down, ffn_in, o);
  if (arch.ffn_post_norm)
    timed(OpProfile::Norm, [&] { backend_.rms_norm(o, fp(L.ffn.post_norm), o, n, c.n_embd, c.rms_eps); });
  timed(OpProfile::Elementwise, [&] { backend_.add(x, o, n * c.n_embd); });
}

}  // namespace strata
