#include "model/model_embedding.h"

#include <algorithm>
#include <vector>

#include "core/check.h"
#include "core/thread_pool.h"
#include "formats/gguf_writer.h"
#include "model/embedding_layout.h"
#include "model/model_config.h"
#include "quant/quantize.h"

namespace strata {

TensorType embedded_matrix_type(TensorType wanted, int64_t n_in_small, int64_t n_in_large) {
  const TensorType t = n_in_small > 0 ? fallback_type(wanted, n_in_small) : wanted;
  return fallback_type(t, n_in_large);
}

namespace {

// Same spread as the random-weight presets: the values of padding rows never reach the output,
// they only have to be finite and look like weights to the kernels.
constexpr float kRandomSigma = 0.02f;

// Checks that the small model has tensor `name` of shape ne (innermost first); returns it.
const TensorInfo& expect_small(const ModelFile& f, const std::string& name,
                               std::initializer_list<int64_t> ne) {
  const TensorInfo* t = f.find_tensor(name);
  if (!t) STRATA_THROW("the small model lacks tensor '", name, "'");
  size_t i = 0;
  bool ok = t->n_dims <= static_cast<int>(ne.size());
  for (int64_t d : ne) ok = ok && t->ne[i++] == d;
  for (; i < 4; ++i) ok = ok && t->ne[i] == 1;
  if (!ok) STRATA_THROW("the small model's tensor '", name, "' does not have the shape its metadata implies");
  if (!is_storage_type(t->type))
    STRATA_THROW("the small model's tensor '", name, "' has unsupported type ", type_name(t->type));
  return *t;
}

// A small tensor as F32: [n_elements].
std::vector<float> read_small(const TensorInfo& t) {
  const int64_t row = t.ne[0], rows = t.n_elements() / t.ne[0];
  std::vector<float> out(static_cast<size_t>(t.n_elements()));
  const size_t rb = row_bytes(t.type, row);
  for (int64_t r = 0; r < rows; ++r)
    dequantize_row(t.type, static_cast<const uint8_t*>(t.data) + static_cast<size_t>(r) * rb,
                   out.data() + r * row, row);
  return out;
}

// One large matrix [n_out, n_in] (see embedding_layout.h for the meaning of the maps).
struct MatrixSpec {
  std::string name;
  int64_t n_out = 0, n_in = 0;
  IndexMap rows;                    // [n_out]
  const IndexMap* cols = nullptr;   // [n_in]; only read for rows that map to the small model
  const TensorInfo* src = nullptr;  // the small counterpart, null in padding layers
  double scale = 1.0;
};

// One large vector [n]: a norm or a bias. out[i] = scale * small[map[i]], 0 for kZero, random for
// kRandom; in padding layers (no src) norms are ones and biases random.
struct VectorSpec {
  std::string name;
  int64_t n = 0;
  const IndexMap* map = nullptr;    // [n]; read only with src
  const TensorInfo* src = nullptr;  // the small counterpart, null in padding layers
  double scale = 1.0;
  bool ones = false;  // a padding layer's norm
};

class EmbeddingWriter {
 public:
  EmbeddingWriter(const EmbeddingLayout& layout, const ModelFile& small, const SynthOptions& o)
      : L_(layout), small_(small), o_(o), pool_(o.n_threads) {}

  void add_all(GgufWriter& w);

 private:
  void add_layer(GgufWriter& w, int64_t il);
  void add_matrix(GgufWriter& w, MatrixSpec m);
  void add_vector(GgufWriter& w, VectorSpec v);
  static IndexMap all(int64_t n, int64_t v) { return IndexMap(static_cast<size_t>(n), v); }

  const EmbeddingLayout& L_;
  const ModelFile& small_;
  const SynthOptions& o_;
  ThreadPool pool_;
  uint64_t tensor_index_ = 0;
  IndexMap vocab_rows_;  // [n_vocab] identity
};

void EmbeddingWriter::add_matrix(GgufWriter& w, MatrixSpec m) {
  const TensorType type = embedded_matrix_type(o_.type, m.src ? m.src->ne[0] : 0, m.n_in);
  const uint64_t id = tensor_index_++;
  const std::string name = m.name;
  w.add_tensor(name, type, {m.n_in, m.n_out}, [this, m = std::move(m), type, id](void* dst, size_t) {
    const std::vector<float> small = m.src ? read_small(*m.src) : std::vector<float>();
    const int64_t small_n_in = m.src ? m.src->ne[0] : 0;
    std::vector<float> big(static_cast<size_t>(m.n_out * m.n_in));  // [n_out, n_in]
    pool_.parallel_for(m.n_out, 16, [&](int64_t b, int64_t e, int) {
      for (int64_t r = b; r < e; ++r) {
        float* row = big.data() + r * m.n_in;
        const int64_t sr = m.rows[static_cast<size_t>(r)];
        if (sr == kRandom) {
          fill_gaussian_row(row, m.n_in, o_.seed, id, r, kRandomSigma);
          continue;
        }
        std::fill(row, row + m.n_in, 0.0f);
        if (sr == kZero) continue;
        STRATA_CHECK(m.src && m.cols, "a mapped row without a small tensor");
        const float* s = small.data() + sr * small_n_in;
        for (int64_t c = 0; c < m.n_in; ++c) {
          const int64_t sc = (*m.cols)[static_cast<size_t>(c)];
          if (sc >= 0) row[c] = static_cast<float>(m.scale * static_cast<double>(s[sc]));
        }
      }
    });
    quantize_rows(type, big.data(), dst, m.n_out, m.n_in, nullptr, &pool_);
  });
}

void EmbeddingWriter::add_vector(GgufWriter& w, VectorSpec v) {
  const uint64_t id = tensor_index_++;
  const std::string name = v.name;
  w.add_tensor(name, TensorType::F32, {v.n}, [this, v = std::move(v), id](void* dst, size_t) {
    auto* out = static_cast<float*>(dst);  // [n]
    if (v.ones) {
      std::fill(out, out + v.n, 1.0f);
      return;
    }
    fill_gaussian_row(out, v.n, o_.seed, id, 0, kRandomSigma);
    if (!v.src) return;
    const std::vector<float> small = read_small(*v.src);
    for (int64_t i = 0; i < v.n; ++i) {
      const int64_t s = (*v.map)[static_cast<size_t>(i)];
      if (s >= 0)
        out[i] = static_cast<float>(v.scale * static_cast<double>(small[static_cast<size_t>(s)]));
      else if (s == kZero)
        out[i] = 0.0f;
    }
  });
}

void EmbeddingWriter::add_layer(GgufWriter& w, int64_t il) {
  const ModelConfig& s = L_.small;
  const bool real = L_.is_real_layer(il);
  const std::string b = "blk." + std::to_string(il) + ".";
  const int64_t n_q = L_.n_head * L_.head_dim, n_kv = L_.n_head_kv * L_.head_dim;
  // The small tensor of this layer, checked against the small shape (null in padding layers).
  auto src = [&](const std::string& suffix, std::initializer_list<int64_t> ne) {
    return real ? &expect_small(small_, b + suffix, ne) : nullptr;
  };
  auto rows = [&](const IndexMap& real_rows, int64_t n, int64_t padding) {
    return real ? real_rows : all(n, padding);
  };
  auto norm = [&](const std::string& suffix) {
    add_vector(w, {b + suffix, L_.n_embd, &L_.residual, src(suffix, {s.n_embd}), L_.norm_scale, !real});
  };
  auto bias = [&](const std::string& suffix, const IndexMap& map, int64_t n_small, double scale) {
    add_vector(w, {b + suffix, static_cast<int64_t>(map.size()), &map, src(suffix, {n_small}), scale, false});
  };

  norm("attn_norm.weight");
  add_matrix(w, {b + "attn_q.weight", n_q, L_.n_embd, rows(L_.q_rows, n_q, kRandom), &L_.residual,
                 src("attn_q.weight", {s.n_embd, s.n_embd_q()}), L_.q_scale});
  add_matrix(w, {b + "attn_k.weight", n_kv, L_.n_embd, rows(L_.k_rows, n_kv, kRandom), &L_.residual,
                 src("attn_k.weight", {s.n_embd, s.n_embd_kv()}), 1.0});
  add_matrix(w, {b + "attn_v.weight", n_kv, L_.n_embd, rows(L_.v_rows, n_kv, kRandom), &L_.residual,
                 src("attn_v.weight", {s.n_embd, s.n_embd_kv()}), 1.0});
  if (s.qkv_bias) {
    bias("attn_q.bias", L_.q_rows, s.n_embd_q(), L_.q_scale);
    bias("attn_k.bias", L_.k_rows, s.n_embd_kv(), 1.0);
    bias("attn_v.bias", L_.v_rows, s.n_embd_kv(), 1.0);
  }
  add_matrix(w, {b + "attn_output.weight", L_.n_embd, n_q, rows(L_.residual, L_.n_embd, kZero), &L_.o_cols,
                 src("attn_output.weight", {s.n_embd_q(), s.n_embd}), 1.0});
  norm("ffn_norm.weight");
  add_matrix(w, {b + "ffn_gate.weight", L_.n_ff, L_.n_embd, rows(L_.ffn_rows, L_.n_ff, kRandom), &L_.residual,
                 src("ffn_gate.weight", {s.n_embd, s.n_ff}), 1.0});
  add_matrix(w, {b + "ffn_up.weight", L_.n_ff, L_.n_embd, rows(L_.ffn_rows, L_.n_ff, kRandom), &L_.residual,
                 src("ffn_up.weight", {s.n_embd, s.n_ff}), 1.0});
  add_matrix(w, {b + "ffn_down.weight", L_.n_embd, L_.n_ff, rows(L_.residual, L_.n_embd, kZero), &L_.ffn_cols,
                 src("ffn_down.weight", {s.n_ff, s.n_embd}), 1.0});
}

void EmbeddingWriter::add_all(GgufWriter& w) {
  const ModelConfig& s = L_.small;
  vocab_rows_.resize(static_cast<size_t>(L_.n_vocab));
  for (int64_t t = 0; t < L_.n_vocab; ++t) vocab_rows_[static_cast<size_t>(t)] = t;
  add_matrix(w, {"token_embd.weight", L_.n_vocab, L_.n_embd, vocab_rows_, &L_.residual,
                 &expect_small(small_, "token_embd.weight", {s.n_embd, L_.n_vocab}), 1.0});
  for (int64_t il = 0; il < L_.n_layer; ++il) add_layer(w, il);
  add_vector(w, {"output_norm.weight", L_.n_embd, &L_.residual,
                 &expect_small(small_, "output_norm.weight", {s.n_embd}), L_.norm_scale, false});
  if (small_.find_tensor("output.weight"))
    add_matrix(w, {"output.weight", L_.n_vocab, L_.n_embd, vocab_rows_, &L_.residual,
                   &expect_small(small_, "output.weight", {s.n_embd, L_.n_vocab}), 1.0});
}

Metadata embedded_metadata(const EmbeddingLayout& L, const SynthPreset& p, const Metadata& small,
                           TensorType type) {
  Metadata md;
  const std::string& a = L.arch;
  auto u32 = [](int64_t v) { return GgufValue::of_u32(static_cast<uint32_t>(v)); };
  md.set("general.architecture", GgufValue::of_string(a));
  md.set("general.name",
         GgufValue::of_string("strata-embed-" + p.name + "-" + small.string_or("general.name", "model")));
  md.set("general.file_type", u32(llama_file_type(type)));
  md.set("general.quantization_version", u32(2));
  md.set(a + ".context_length", u32(std::max(L.small.n_ctx_train, p.n_ctx)));
  md.set(a + ".embedding_length", u32(L.n_embd));
  md.set(a + ".feed_forward_length", u32(L.n_ff));
  md.set(a + ".block_count", u32(L.n_layer));
  md.set(a + ".attention.head_count", u32(L.n_head));
  md.set(a + ".attention.head_count_kv", u32(L.n_head_kv));
  md.set(a + ".attention.layer_norm_rms_epsilon", GgufValue::of_f32(L.rms_eps));
  md.set(a + ".rope.freq_base", GgufValue::of_f32(L.rope_base));
  md.set(a + ".rope.dimension_count", u32(L.head_dim));
  md.set(a + ".vocab_size", u32(L.n_vocab));
  if (L.small.sliding_window > 0) md.set(a + ".attention.sliding_window", u32(L.small.sliding_window));
  // Rope scaling acts on each frequency alone (see embedding_layout.cpp); the tokenizer is the
  // small model's. Nothing else of the small model's metadata describes the large one.
  for (const auto& [key, value] : small.entries())
    if (key.starts_with(a + ".rope.scaling.") || key.starts_with("tokenizer.")) md.set(key, value);
  return md;
}

}  // namespace

void write_embedded_model(const SynthPreset& preset, const ModelFile& small, const SynthOptions& options,
                          const std::string& path, const std::function<void(size_t, size_t)>& progress) {
  ModelConfig sc = ModelConfig::from_metadata(small.metadata());
  const TensorInfo* embd = small.find_tensor("token_embd.weight");
  if (!embd) STRATA_THROW("the small model lacks tensor 'token_embd.weight'");
  if (sc.n_vocab == 0) sc.n_vocab = embd->ne[1];
  if (small.find_tensor("rope_freqs.weight"))
    STRATA_THROW(
        "the small model has per-frequency rope factors (rope_freqs.weight): not supported by --from");
  const EmbeddingLayout layout = plan_embedding(sc, preset);

  GgufWriter w;
  w.set_metadata(embedded_metadata(layout, preset, small.metadata(), options.type));
  EmbeddingWriter writer(layout, small, options);
  writer.add_all(w);  // checks every small tensor before anything is written
  const size_t total = w.tensor_count();
  w.write(path, [&](size_t i) {
    if (progress) progress(i + 1, total);
  });
}

}  // namespace strata
