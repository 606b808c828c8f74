#include "model/model.h"

#include <chrono>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/log.h"
#include "quant/quantize.h"

namespace strata {

struct Model::Layer {
  std::unique_ptr<BackendBuffer> attn_norm;            // [n_embd]
  std::unique_ptr<BackendMatrix> wq, wk, wv, wo;       // [n_embd_q, n_embd], [n_embd_kv, n_embd] x2, [n_embd, n_embd_q]
  std::unique_ptr<BackendBuffer> bq, bk, bv;           // [n_embd_q], [n_embd_kv] x2 (qwen2 only)
  std::unique_ptr<BackendBuffer> ffn_norm;             // [n_embd]
  std::unique_ptr<BackendMatrix> w_gate, w_up, w_down;  // [n_ff, n_embd] x2, [n_embd, n_ff]
};

// Activations of one micro-batch of up to `cap` tokens.
struct Model::Scratch {
  int64_t cap = 0;
  std::unique_ptr<BackendBuffer> x, h, q, k, v, attn, o, gate, up;
  std::vector<int64_t> slots;  // [cap]
};

namespace {

// Checks a tensor's presence, type and shape; returns it.
const TensorInfo& expect_tensor(const ModelFile& f, const std::string& name, std::initializer_list<int64_t> shape) {
  const TensorInfo* t = f.find_tensor(name);
  if (!t) STRATA_THROW("model is missing tensor '", name, "'");
  const int n = static_cast<int>(shape.size());
  int i = 0;
  bool ok = t->n_dims <= n;
  for (int64_t d : shape) ok = ok && t->ne[static_cast<size_t>(i++)] == d;
  for (; i < 4; ++i) ok = ok && t->ne[static_cast<size_t>(i)] == 1;
  if (!ok) {
    std::string want, got;
    for (int64_t d : shape) want += (want.empty() ? "" : ", ") + std::to_string(d);
    for (int j = 0; j < std::max(t->n_dims, 1); ++j) got += (j ? ", " : "") + std::to_string(t->ne[static_cast<size_t>(j)]);
    STRATA_THROW("tensor '", name, "' has shape [", got, "], expected [", want, "]");
  }
  if (!is_storage_type(t->type)) STRATA_THROW("tensor '", name, "' has unsupported type ", type_name(t->type));
  return *t;
}

}  // namespace

const char* OpProfile::name(int op) {
  static const char* const kNames[] = {"embed", "norm", "matmul", "rope", "attention", "elementwise", "output"};
  return op >= 0 && op < kNumOps ? kNames[op] : "?";
}

template <typename F>
void Model::timed(OpProfile::Op op, F&& f) {
  if (!profiling_) {
    f();
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  f();
  profile_.seconds[op] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++profile_.calls[op];
}

Model::Model(std::unique_ptr<ModelFile> file, Backend& backend, const ModelLoadOptions& options)
    : file_(std::move(file)), backend_(backend), options_(options) {}

Model::~Model() = default;

std::unique_ptr<Model> Model::load(const std::string& path, Backend& backend, const ModelLoadOptions& options) {
  std::unique_ptr<Model> m(new Model(open_model_file(path, options.tokenizer_path), backend, options));
  m->config_ = ModelConfig::from_metadata(m->file_->metadata());
  m->tokenizer_ = Tokenizer::from_metadata(m->file_->metadata());
  m->bind_weights();
  STRATA_CHECK(options.max_batch_tokens > 0);
  return m;
}

void Model::bind_weights() {
  ModelConfig& c = config_;
  const ModelFile& f = *file_;
  const TensorInfo* embd = f.find_tensor("token_embd.weight");
  if (!embd) STRATA_THROW("model is missing tensor 'token_embd.weight'");
  if (c.n_vocab == 0) c.n_vocab = embd->ne[1];
  token_embd_ = &expect_tensor(f, "token_embd.weight", {c.n_embd, c.n_vocab});
  if (tokenizer_->n_vocab() > c.n_vocab)
    STRATA_THROW("tokenizer has ", tokenizer_->n_vocab(), " tokens but the model only ", c.n_vocab);

  auto vec = [&](const std::string& name, int64_t n) {
    const TensorInfo& t = expect_tensor(f, name, {n});
    auto buf = backend_.alloc(static_cast<size_t>(n) * sizeof(float));
    dequantize_row(t.type, t.data, static_cast<float*>(buf->data()), n);
    return buf;
  };
  // A backend that made its own copy no longer needs the file's pages: keep RSS ~ one copy.
  auto prepared = [&](const TensorInfo& t) {
    auto m = backend_.prepare_matrix(t);
    if (m->owned_bytes() > 0) f.drop_tensor_pages(t);
    return m;
  };
  auto mat = [&](const std::string& name, int64_t n_out, int64_t n_in) {
    return prepared(expect_tensor(f, name, {n_in, n_out}));
  };

  for (int64_t il = 0; il < c.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    Layer L;
    L.attn_norm = vec(p + "attn_norm.weight", c.n_embd);
    L.wq = mat(p + "attn_q.weight", c.n_embd_q(), c.n_embd);
    L.wk = mat(p + "attn_k.weight", c.n_embd_kv(), c.n_embd);
    L.wv = mat(p + "attn_v.weight", c.n_embd_kv(), c.n_embd);
    L.wo = mat(p + "attn_output.weight", c.n_embd, c.n_embd_q());
    if (c.qkv_bias) {
      L.bq = vec(p + "attn_q.bias", c.n_embd_q());
      L.bk = vec(p + "attn_k.bias", c.n_embd_kv());
      L.bv = vec(p + "attn_v.bias", c.n_embd_kv());
    }
    L.ffn_norm = vec(p + "ffn_norm.weight", c.n_embd);
    L.w_gate = mat(p + "ffn_gate.weight", c.n_ff, c.n_embd);
    L.w_up = mat(p + "ffn_up.weight", c.n_ff, c.n_embd);
    L.w_down = mat(p + "ffn_down.weight", c.n_embd, c.n_ff);
    layers_.push_back(std::move(L));
  }
  output_norm_ = vec("output_norm.weight", c.n_embd);
  output_ = f.find_tensor("output.weight") ? mat("output.weight", c.n_vocab, c.n_embd)
                                           : prepared(*token_embd_);  // tied embeddings
  if (f.find_tensor("rope_freqs.weight")) {
    const TensorInfo& t = expect_tensor(f, "rope_freqs.weight", {c.rope.n_rot / 2});
    rope_freq_factors_.resize(static_cast<size_t>(c.rope.n_rot / 2));
    dequantize_row(t.type, t.data, rope_freq_factors_.data(), c.rope.n_rot / 2);
    for (float v : rope_freq_factors_)
      if (!(v > 0.0f) || !std::isfinite(v)) STRATA_THROW("rope_freqs.weight has a non-positive factor");
    c.rope.freq_factors = rope_freq_factors_.data();
  }
}

KvGeometry Model::kv_geometry(const KvCacheType& kv_type, int32_t block_size) const {
  KvGeometry g;
  g.n_layer = static_cast<int32_t>(config_.n_layer);
  g.n_head_kv = static_cast<int32_t>(config_.n_head_kv);
  g.head_dim = static_cast<int32_t>(config_.head_dim);
  g.block_size = block_size;
  g.type = kv_type;
  return g;
}

size_t Model::weight_bytes() const {
  size_t total = output_->weight_bytes();
  for (const Layer& L : layers_)
    for (const BackendMatrix* m : {L.wq.get(), L.wk.get(), L.wv.get(), L.wo.get(), L.w_gate.get(), L.w_up.get(),
                                   L.w_down.get()})
      total += m->weight_bytes();
  return total;
}

void Model::forward(const ForwardBatch& batch, const KvStorage& kv, float* logits) {
  const int64_t n = batch.n_tokens();
  STRATA_CHECK(batch.pos.size() == static_cast<size_t>(n) && batch.seq.size() == static_cast<size_t>(n) &&
               batch.want_logits.size() == static_cast<size_t>(n));
  STRATA_CHECK(kv.geometry().n_layer == config_.n_layer && kv.geometry().n_head_kv == config_.n_head_kv &&
               kv.geometry().head_dim == config_.head_dim, "KV storage does not match the model");
  const int64_t step = options_.max_batch_tokens;
  for (int64_t begin = 0; begin < n; begin += step) {
    const int64_t end = std::min(n, begin + step);
    forward_micro_batch(batch, begin, end, kv, logits);
    for (int64_t t = begin; t < end; ++t)
      if (batch.want_logits[static_cast<size_t>(t)]) logits += config_.n_vocab;
  }
}

void Model::forward_micro_batch(const ForwardBatch& batch, int64_t begin, int64_t end, const KvStorage& kv,
                                float* logits) {
  const ModelConfig& c = config_;
  const int64_t n = end - begin;
  if (!scratch_ || scratch_->cap < n) {
    auto s = std::make_unique<Scratch>();
    s->cap = std::max<int64_t>(n, scratch_ ? scratch_->cap : 0);
    auto buf = [&](int64_t width) { return backend_.alloc(static_cast<size_t>(s->cap * width) * sizeof(float)); };
    s->x = buf(c.n_embd);
    s->h = buf(c.n_embd);
    s->q = buf(c.n_embd_q());
    s->k = buf(c.n_embd_kv());
    s->v = buf(c.n_embd_kv());
    s->attn = buf(c.n_embd_q());
    s->o = buf(c.n_embd);
    s->gate = buf(c.n_ff);
    s->up = buf(c.n_ff);
    s->slots.resize(static_cast<size_t>(s->cap));
    scratch_ = std::move(s);
  }
  Scratch& s = *scratch_;

  AttentionBatch ab;
  ab.n_tokens = n;
  ab.pos = batch.pos.data() + begin;
  ab.seq = batch.seq.data() + begin;
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
    const int32_t tok = batch.tokens[static_cast<size_t>(begin + t)];
    STRATA_CHECK(tok >= 0 && tok < c.n_vocab, "token id ", tok, " out of range");
    s.slots[static_cast<size_t>(t)] = static_cast<int64_t>(ab.block_tables[static_cast<size_t>(sq)][p / bs]) * bs + p % bs;
  }

  float* x = static_cast<float*>(s.x->data());
  timed(OpProfile::Embed, [&] { backend_.get_rows(*token_embd_, batch.tokens.data() + begin, n, x); });
  for (int64_t il = 0; il < c.n_layer; ++il)
    run_layer(layers_[static_cast<size_t>(il)], n, kv.layer(static_cast<int32_t>(il)), ab);

  // Only the rows whose logits are wanted go through the final norm and the output matrix.
  float* h = static_cast<float*>(s.h->data());
  int64_t n_out = 0;
  for (int64_t t = 0; t < n; ++t) {
    if (!batch.want_logits[static_cast<size_t>(begin + t)]) continue;
    if (n_out != t) std::memcpy(x + n_out * c.n_embd, x + t * c.n_embd, static_cast<size_t>(c.n_embd) * sizeof(float));
    ++n_out;
  }
  if (n_out == 0) return;
  timed(OpProfile::Norm, [&] { backend_.rms_norm(x, static_cast<const float*>(output_norm_->data()), h, n_out, c.n_embd, c.rms_eps); });
  timed(OpProfile::Output, [&] { backend_.matmul(*output_, h, logits, n_out); });
}

void Model::run_layer(const Layer& L, int64_t n, const KvLayerView& kv, const AttentionBatch& ab) {
  const ModelConfig& c = config_;
  Scratch& s = *scratch_;
  float* x = static_cast<float*>(s.x->data());
  float* h = static_cast<float*>(s.h->data());
  float* q = static_cast<float*>(s.q->data());
  float* k = static_cast<float*>(s.k->data());
  float* v = static_cast<float*>(s.v->data());
  float* attn = static_cast<float*>(s.attn->data());
  float* o = static_cast<float*>(s.o->data());
  float* gate = static_cast<float*>(s.gate->data());
  float* up = static_cast<float*>(s.up->data());

  timed(OpProfile::Norm, [&] { backend_.rms_norm(x, static_cast<const float*>(L.attn_norm->data()), h, n, c.n_embd, c.rms_eps); });
  timed(OpProfile::Matmul, [&] { backend_.matmul(*L.wq, h, q, n); });
  timed(OpProfile::Matmul, [&] { backend_.matmul(*L.wk, h, k, n); });
  timed(OpProfile::Matmul, [&] { backend_.matmul(*L.wv, h, v, n); });
  if (c.qkv_bias) {
    timed(OpProfile::Elementwise, [&] { backend_.add_bias(q, static_cast<const float*>(L.bq->data()), n, c.n_embd_q()); });
    timed(OpProfile::Elementwise, [&] { backend_.add_bias(k, static_cast<const float*>(L.bk->data()), n, c.n_embd_kv()); });
    timed(OpProfile::Elementwise, [&] { backend_.add_bias(v, static_cast<const float*>(L.bv->data()), n, c.n_embd_kv()); });
  }
  timed(OpProfile::Rope, [&] { backend_.rope(q, ab.pos, n, c.n_head, c.head_dim, c.rope); });
  timed(OpProfile::Rope, [&] { backend_.rope(k, ab.pos, n, c.n_head_kv, c.head_dim, c.rope); });
  timed(OpProfile::Attention, [&] { backend_.store_kv(kv, k, v, ab); });

  AttentionParams ap;
  ap.n_head = static_cast<int32_t>(c.n_head);
  ap.n_head_kv = static_cast<int32_t>(c.n_head_kv);
  ap.head_dim = static_cast<int32_t>(c.head_dim);
  ap.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  ap.sliding_window = static_cast<int32_t>(c.sliding_window);
  timed(OpProfile::Attention, [&] { backend_.attention(q, kv, ab, ap, attn); });
  timed(OpProfile::Matmul, [&] { backend_.matmul(*L.wo, attn, o, n); });
  timed(OpProfile::Elementwise, [&] { backend_.add(x, o, n * c.n_embd); });

  timed(OpProfile::Norm, [&] { backend_.rms_norm(x, static_cast<const float*>(L.ffn_norm->data()), h, n, c.n_embd, c.rms_eps); });
  timed(OpProfile::Matmul, [&] { backend_.matmul(*L.w_gate, h, gate, n); });
  timed(OpProfile::Matmul, [&] { backend_.matmul(*L.w_up, h, up, n); });
  timed(OpProfile::Elementwise, [&] { backend_.swiglu(gate, up, gate, n * c.n_ff); });
  timed(OpProfile::Matmul, [&] { backend_.matmul(*L.w_down, gate, o, n); });
  timed(OpProfile::Elementwise, [&] { backend_.add(x, o, n * c.n_embd); });
}

}  // namespace strata
