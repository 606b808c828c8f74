// The CPU implementation of the Backend interface: host memory, a persistent thread pool, the
// matmul kernels (matmul.h) and the op kernels (cpu_ops.h), all dispatched by ISA level.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/attention.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/kv_codec.h"
#include "backend/cpu/kv_store.h"
#include "backend/cpu/kv_token_ops.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/matrix_stack.h"
#include "backend/cpu/moe_routing.h"
#include "backend/cpu/rope_table.h"
#include "backend/cpu/vector_ops.h"
#include "backend/cpu/w8a8_matrix.h"
#include "core/check.h"
#include "core/thread_pool.h"
#include "formats/model_file.h"
#include "quant/quantize.h"

namespace strata {
namespace {

class HostBuffer final : public BackendBuffer {
 public:
  explicit HostBuffer(size_t bytes) : size_(bytes) {
    data_ = bytes ? std::aligned_alloc(64, (bytes + 63) / 64 * 64) : nullptr;
    if (bytes && !data_) throw std::bad_alloc();
  }
  ~HostBuffer() override { std::free(data_); }
  void* data() override { return data_; }
  size_t size() const override { return size_; }

 private:
  void* data_;
  size_t size_;
};

class CpuMatrix final : public BackendMatrix {
 public:
  CpuMatrix(TensorType type, int64_t n_in, int64_t n_out, std::unique_ptr<cpu::PackedMatrix> packed)
      : type_(type), n_in_(n_in), n_out_(n_out), packed_(std::move(packed)) {}
  TensorType type() const override { return type_; }
  int64_t n_in() const override { return n_in_; }
  int64_t n_out() const override { return n_out_; }
  size_t weight_bytes() const override { return row_bytes(type_, n_in_) * static_cast<size_t>(n_out_); }
  size_t owned_bytes() const override { return packed_->owned_bytes(); }
  const cpu::PackedMatrix& packed() const { return *packed_; }

 private:
  TensorType type_;
  int64_t n_in_, n_out_;
  std::unique_ptr<cpu::PackedMatrix> packed_;
};

// A W8A8 matrix (w8a8_matrix.h), made from t's weights dequantized to f32.
class CpuW8A8Matrix final : public BackendMatrix {
 public:
  CpuW8A8Matrix(TensorType source_type, std::unique_ptr<cpu::W8A8Matrix> m)
      : type_(source_type), m_(std::move(m)) {}
  TensorType type() const override { return type_; }
  int64_t n_in() const override { return m_->n_in(); }
  int64_t n_out() const override { return m_->n_out(); }
  size_t weight_bytes() const override { return m_->weight_bytes(); }
  size_t owned_bytes() const override { return m_->weight_bytes(); }
  const cpu::W8A8Matrix& w8a8() const { return *m_; }

 private:
  TensorType type_;
  std::unique_ptr<cpu::W8A8Matrix> m_;
};

class CpuMatrixStack final : public BackendMatrixStack {
 public:
  explicit CpuMatrixStack(std::unique_ptr<cpu::PackedMatrixStack> packed) : packed_(std::move(packed)) {}
  TensorType type() const override { return packed_->type(); }
  int64_t n_mats() const override { return packed_->n_mats(); }
  int64_t n_in() const override { return packed_->n_in(); }
  int64_t n_out() const override { return packed_->n_out(); }
  size_t matrix_bytes() const override { return packed_->matrix_bytes(); }
  size_t owned_bytes() const override { return packed_->owned_bytes(); }
  const cpu::PackedMatrixStack& packed() const { return *packed_; }

 private:
  std::unique_ptr<cpu::PackedMatrixStack> packed_;
};

// gpt-oss's clamped SwiGLU constants (fixed by the model, not stored in GGUF files).
constexpr float kSwigluOaiAlpha = 1.702f;
constexpr float kSwigluOaiLimit = 7.0f;

// Element counts below which an op runs on the calling thread (dispatch would cost more).
constexpr int64_t kParallelElements = 1 << 15;

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int n_threads) : pool_(n_threads) {}

  std::string name() const override { return "cpu (" + cpu_description() + ")"; }
  int n_threads() const override { return pool_.size(); }
  ThreadPool& pool() { return pool_; }

  std::unique_ptr<BackendBuffer> alloc(size_t bytes) override { return std::make_unique<HostBuffer>(bytes); }

  std::unique_ptr<BackendMatrix> prepare_matrix(const TensorInfo& t) override {
    STRATA_CHECK(t.n_dims <= 2 && t.ne[2] == 1 && t.ne[3] == 1, "not a matrix: ", t.name);
    return std::make_unique<CpuMatrix>(t.type, t.ne[0], t.ne[1],
                                       cpu::pack_matrix(t.type, t.ne[0], t.ne[1], t.data));
  }

  std::unique_ptr<BackendMatrix> prepare_w8a8_matrix(const TensorInfo& t, float static_act_absmax) override {
    if (t.n_dims > 2 || t.ne[2] != 1 || t.ne[3] != 1) STRATA_THROW("W8A8: '", t.name, "' is not a matrix");
    if (t.type != TensorType::F32 && t.type != TensorType::F16 && t.type != TensorType::BF16 &&
        t.type != TensorType::Q8_0)
      STRATA_THROW("W8A8 is made from F32, F16, BF16 or Q8_0 weights; '", t.name, "' is ", type_name(t.type));
    const int64_t n_in = t.ne[0], n_out = t.ne[1];
    std::vector<float> w(static_cast<size_t>(n_in * n_out));  // [n_out, n_in]
    const size_t stride = row_bytes(t.type, n_in);
    for (int64_t o = 0; o < n_out; ++o)
      dequantize_row(t.type, static_cast<const uint8_t*>(t.data) + stride * static_cast<size_t>(o),
                     w.data() + o * n_in, n_in);
    return std::make_unique<CpuW8A8Matrix>(
        t.type, cpu::W8A8Matrix::pack(&pool_, w.data(), n_in, n_out, cpu::W8A8ActQuant{static_act_absmax}));
  }

  std::unique_ptr<BackendMatrixStack> prepare_matrix_stack(const TensorInfo& t) override {
    STRATA_CHECK(t.n_dims <= 3 && t.ne[3] == 1, "not a stack of matrices: ", t.name);
    return std::make_unique<CpuMatrixStack>(
        std::make_unique<cpu::PackedMatrixStack>(t.type, t.ne[0], t.ne[1], t.ne[2], t.data));
  }

  void get_rows(const TensorInfo& table, const int32_t* ids, int64_t n_ids, float* out) override {
    const int64_t n_embd = table.ne[0];
    const size_t stride = row_bytes(table.type, n_embd);
    for (int64_t i = 0; i < n_ids; ++i) {
      STRATA_CHECK(ids[i] >= 0 && ids[i] < table.ne[1], "token id ", ids[i], " out of range");
      dequantize_row(table.type,
                     static_cast<const uint8_t*>(table.data) + stride * static_cast<size_t>(ids[i]),
                     out + i * n_embd, n_embd);
    }
  }

  void matmul(const BackendMatrix& w, const float* x, float* y, int64_t n_tokens) override {
    if (const auto* q = dynamic_cast<const CpuW8A8Matrix*>(&w)) {
      cpu::w8a8_matmul(pool_, q->w8a8(), x, y, n_tokens);
      return;
    }
    cpu::matmul(pool_, static_cast<const CpuMatrix&>(w).packed(), x, y, n_tokens);
  }

  void rms_norm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps) override {
    const auto& k = cpu::op_kernels();
    for_rows(n_rows, n, [&](int64_t r) { k.rms_norm_row(x + r * n, w, y + r * n, n, eps); });
  }

  void add_bias(float* y, const float* b, int64_t n_rows, int64_t n) override {
    const auto& k = cpu::op_kernels();
    for_rows(n_rows, n, [&](int64_t r) { k.add(y + r * n, b, n); });
  }

  void add(float* y, const float* x, int64_t n) override {
    const auto& k = cpu::op_kernels();
    for_range(n, [&](int64_t b, int64_t e) { k.add(y + b, x + b, e - b); });
  }

  void swiglu(const float* gate, const float* up, float* out, int64_t n) override {
    const auto& k = cpu::op_kernels();
    for_range(n, [&](int64_t b, int64_t e) { k.swiglu(gate + b, up + b, out + b, e - b); });
  }

  void glu(GluKind kind, const float* gate, const float* up, int64_t in_stride, float* out, int64_t n_rows,
           int64_t n) override {
    const auto& ops = cpu::op_kernels();
    const auto& vk = cpu::vector_kernels();
    auto row = [&](const float* g, const float* u, float* o, int64_t len) {
      switch (kind) {
        case GluKind::Silu:
          ops.swiglu(g, u, o, len);
          break;
        case GluKind::GeluTanh:
          vk.glu_gelu_tanh(g, u, o, len);
          break;
        case GluKind::SwigluOai:
          vk.glu_swiglu_oai(g, u, o, len, kSwigluOaiAlpha, kSwigluOaiLimit);
          break;
      }
    };
    if (in_stride == n) {  // contiguous: split the whole range, not rows
      for_range(n_rows * n, [&](int64_t b, int64_t e) { row(gate + b, up + b, out + b, e - b); });
      return;
    }
    for_rows(n_rows, n, [&](int64_t r) { row(gate + r * in_stride, up + r * in_stride, out + r * n, n); });
  }

  void softcap(float* x, int64_t n, float cap) override {
    STRATA_CHECK(cap > 0.0f);
    const auto& vk = cpu::vector_kernels();
    for_range(n, [&](int64_t b, int64_t e) { vk.softcap(x + b, e - b, cap); });
  }

  void scale(float* x, int64_t n, float s) override {
    const auto& vk = cpu::vector_kernels();
    for_range(n, [&](int64_t b, int64_t e) { vk.scale(x + b, e - b, s); });
  }

  void copy_rows(const float* src, int64_t src_stride, float* dst, int64_t dst_stride, int64_t n_rows,
                 int64_t n) override {
    for (int64_t r = 0; r < n_rows; ++r)
      std::memcpy(dst + r * dst_stride, src + r * src_stride, static_cast<size_t>(n) * sizeof(float));
  }

  void moe_route(const float* logits, int64_t n_tokens, const MoeRouting& r, int32_t* ids,
                 float* weights) override {
    for (int64_t t = 0; t < n_tokens; ++t)
      cpu::route_token(logits + t * r.n_experts, r, ids + t * r.n_used, weights + t * r.n_used);
  }

  void matmul_stack(const BackendMatrixStack& w, const int32_t* ids, int64_t n_tokens, int64_t n_slots,
                    const float* x, SlotLayout x_layout, float* y, SlotLayout y_layout) override {
    cpu::matmul_stack(pool_, static_cast<const CpuMatrixStack&>(w).packed(), ids, n_tokens, n_slots, x,
                      x_layout, y, y_layout);
  }

  void add_stack_bias(float* y, const float* bias, const int32_t* ids, int64_t n_tokens, int64_t n_slots,
                      int64_t n) override {
    const auto& ops = cpu::op_kernels();
    for (int64_t r = 0; r < n_tokens * n_slots; ++r)
      ops.add(y + r * n, bias + static_cast<int64_t>(ids[r]) * n, n);
  }

  void weighted_sum(const float* y, const float* weights, int64_t n_tokens, int64_t n_slots, int64_t n,
                    float* out) override {
    const auto& vk = cpu::vector_kernels();
    for_rows(n_tokens, n * n_slots, [&](int64_t t) {
      vk.weighted_sum_row(y + t * n_slots * n, n, weights + t * n_slots, static_cast<int>(n_slots),
                          out + t * n, n);
    });
  }

  void rope(float* x, const int32_t* pos, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
            const RopeParams& p) override {
    STRATA_CHECK(p.n_rot > 0 && p.n_rot % 2 == 0 && p.n_rot <= head_dim);
    const auto& k = cpu::op_kernels();
    int32_t max_pos = 0;
    for (int64_t t = 0; t < n_tokens; ++t) {
      STRATA_CHECK(pos[t] >= 0, "negative position");
      max_pos = std::max(max_pos, pos[t]);
    }
    const float* table = rope_tables_.get(p, max_pos);
    const bool neox = p.style == RopeStyle::NeoX;
    for_rows(n_tokens, n_heads * head_dim, [&](int64_t t) {
      k.rope_row(x + t * n_heads * head_dim, table + static_cast<int64_t>(pos[t]) * p.n_rot, n_heads,
                 head_dim, p.n_rot, neox);
    });
  }

  void store_kv(const KvLayerView& kv, const float* k, const float* v, const AttentionBatch& batch) override;
  void copy_kv_block(const KvLayerView& kv, int32_t src, int32_t dst) override;
  void attention(const float* q, const KvLayerView& kv, const AttentionBatch& batch, const AttentionParams& p,
                 float* out) override;
  void attention_scores(const float* q, const KvLayerView& kv, const AttentionBatch& batch,
                        const AttentionParams& p, const std::vector<AttentionScoreSink>& sinks) override;
  void move_kv_tokens(const KvLayerView& kv, const KvTokenMove* moves, int64_t n) override;

 private:
  template <typename F>
  void for_rows(int64_t n_rows, int64_t row_elems, F&& f) {
    if (n_rows == 1 || n_rows * row_elems < kParallelElements) {
      for (int64_t r = 0; r < n_rows; ++r) f(r);
      return;
    }
    pool_.parallel_for(n_rows, 1, [&](int64_t b, int64_t e, int) {
      for (int64_t r = b; r < e; ++r) f(r);
    });
  }

  template <typename F>
  void for_range(int64_t n, F&& f) {
    if (n < kParallelElements) {
      f(0, n);
      return;
    }
    const int64_t grain = (n + pool_.size() - 1) / pool_.size();
    pool_.parallel_for(n, grain, [&](int64_t b, int64_t e, int) { f(b, e); });
  }

  ThreadPool pool_;
  cpu::RopeTables rope_tables_;
};

void CpuBackend::store_kv(const KvLayerView& kv, const float* k, const float* v,
                          const AttentionBatch& batch) {
  STRATA_CHECK(kv.head_dim <= cpu::kMaxHeadDim && kv.v_dim() <= cpu::kMaxHeadDim &&
               kv.block_size <= cpu::kMaxBlockSize);
  const int64_t k_row = static_cast<int64_t>(kv.n_head_kv) * kv.head_dim;
  const int64_t v_row = static_cast<int64_t>(kv.n_head_kv) * kv.v_dim();
  for (int64_t t = 0; t < batch.n_tokens; ++t)
    STRATA_CHECK(batch.slot[t] >= 0 && batch.slot[t] / kv.block_size < kv.n_blocks, "KV slot out of range");
  const cpu::KvCodecKernels& codec = cpu::kv_codec_kernels();
  for_rows(batch.n_tokens, k_row + v_row, [&](int64_t t) {
    cpu::store_token(kv, codec, k + t * k_row, kv.v_in_k ? nullptr : v + t * v_row,
                     batch.slot[t] / kv.block_size, static_cast<int32_t>(batch.slot[t] % kv.block_size));
  });
  if (kv.staging) cpu::store_staged(kv, codec, k, v, batch);
}

void CpuBackend::copy_kv_block(const KvLayerView& kv, int32_t src, int32_t dst) {
  STRATA_CHECK(src >= 0 && src < kv.n_blocks && dst >= 0 && dst < kv.n_blocks);
  cpu::copy_block(kv, cpu::kv_codec_kernels(), src, dst);
}

void CpuBackend::attention(const float* q, const KvLayerView& kv, const AttentionBatch& batch,
                           const AttentionParams& p, float* out) {
  const int32_t hd_v = p.head_dim_v > 0 ? p.head_dim_v : p.head_dim;
  STRATA_CHECK(p.head_dim == kv.head_dim && hd_v == kv.v_dim(),
               "attention head sizes do not match the KV cache");
  STRATA_CHECK(p.head_dim <= cpu::kMaxHeadDim && hd_v <= cpu::kMaxHeadDim &&
               kv.block_size <= cpu::kMaxBlockSize);
  STRATA_CHECK(!kv.v_in_k || hd_v <= p.head_dim, "MLA: V must be a prefix of the K row");
  STRATA_CHECK(p.softcap >= 0.0f && std::isfinite(p.softcap));
  STRATA_CHECK(p.n_head_kv > 0 && p.n_head % p.n_head_kv == 0);
  const int32_t group = p.n_head / p.n_head_kv;
  STRATA_CHECK(group <= cpu::kMaxGroup);
  STRATA_CHECK(p.n_sink_tokens >= 0 && (p.n_sink_tokens == 0 || (p.q_sink && p.sliding_window > 0)),
               "attention sinks need q_sink and a sliding window");
  const int32_t max_q = std::max(1, std::min(cpu::kMaxChunkTokens, 64 / group));
  // Chunks: runs of consecutive tokens of one sequence.
  struct Span {
    int64_t first;
    int32_t n;
  };
  std::vector<Span> spans;
  for (int64_t t = 0; t < batch.n_tokens;) {
    int32_t n = 1;
    while (n < max_q && t + n < batch.n_tokens && batch.seq[t + n] == batch.seq[t]) ++n;
    spans.push_back({t, n});
    t += n;
  }
  const IsaLevel isa = isa_level();
  const int64_t q_row = static_cast<int64_t>(p.n_head) * p.head_dim;
  const int64_t out_row = static_cast<int64_t>(p.n_head) * hd_v;
  // With enough spans to keep every thread busy, one item runs a span's kv heads together
  // (attention_chunks: the pool's tiles of one block in address order); else one head an item.
  const int32_t heads_per_item = static_cast<int64_t>(spans.size()) < 4 * static_cast<int64_t>(pool_.size())
                                     ? 1
                                     : std::min(p.n_head_kv, cpu::kMaxInterleavedChunks);
  const int32_t head_items = (p.n_head_kv + heads_per_item - 1) / heads_per_item;
  const int64_t n_items = static_cast<int64_t>(spans.size()) * head_items;
  auto make_chunk = [&](const Span& sp, int32_t g) {
    const int32_t s = batch.seq[sp.first];
    cpu::AttentionChunk c;
    c.q = q + sp.first * q_row + static_cast<int64_t>(g) * group * p.head_dim;
    c.q_stride = q_row;
    c.out = out + sp.first * out_row + static_cast<int64_t>(g) * group * hd_v;
    c.out_stride = out_row;
    c.pos = batch.pos + sp.first;
    c.n_q = sp.n;
    c.group = group;
    c.kv_head = g;
    c.block_table = batch.block_tables[s];
    c.scale = p.scale;
    c.sliding_window = p.sliding_window;
    c.softcap = p.softcap;
    c.sinks = p.sinks ? p.sinks + static_cast<int64_t>(g) * group : nullptr;
    c.n_sink_tokens = p.n_sink_tokens;
    c.q_sink =
        p.q_sink ? p.q_sink + sp.first * q_row + static_cast<int64_t>(g) * group * p.head_dim : nullptr;
    for (int32_t i = 0; i < sp.n; ++i)
      STRATA_CHECK(batch.pos[sp.first + i] / kv.block_size < batch.n_blocks[s],
                   "position beyond block table");
    return c;
  };
  auto run_item = [&](int64_t item) {
    const Span& sp = spans[item / head_items];
    const int32_t g0 = static_cast<int32_t>(item % head_items) * heads_per_item;
    const int n = std::min(heads_per_item, p.n_head_kv - g0);
    cpu::AttentionChunk cs[cpu::kMaxInterleavedChunks];
    for (int i = 0; i < n; ++i) cs[i] = make_chunk(sp, g0 + i);
    cpu::attention_chunks(cs, n, kv, isa);
  };
  if (n_items == 1) {
    run_item(0);
    return;
  }
  pool_.parallel_for(n_items, 1, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) run_item(i);
  });
}

void CpuBackend::attention_scores(const float* q, const KvLayerView& kv, const AttentionBatch& batch,
                                  const AttentionParams& p, const std::vector<AttentionScoreSink>& sinks) {
  STRATA_CHECK(cpu::kv_tokens_addressable(kv), "KV eviction needs a K and V type other than KIVI");
  STRATA_CHECK(p.head_dim == kv.head_dim && p.n_head_kv == kv.n_head_kv && p.n_head % p.n_head_kv == 0);
  STRATA_CHECK(p.sliding_window == 0 && p.n_sink_tokens == 0, "KV eviction scores need full attention");
  STRATA_CHECK(sinks.size() == batch.block_tables.size());
  const int32_t group = p.n_head / p.n_head_kv;
  const int64_t q_row = static_cast<int64_t>(p.n_head) * p.head_dim;
  // One job per (scored sequence, kv head): its observation queries are consecutive batch rows.
  struct Run {
    int64_t first;
    int32_t n;
  };
  std::vector<Run> runs;
  for (int64_t t = 0; t < batch.n_tokens; ++t) {
    const AttentionScoreSink& sk = sinks[static_cast<size_t>(batch.seq[t])];
    if (!sk.acc || batch.pos[t] < sk.first_pos || batch.pos[t] >= sk.end_pos) continue;
    if (!runs.empty() && runs.back().first + runs.back().n == t &&
        batch.seq[runs.back().first] == batch.seq[t])
      ++runs.back().n;
    else
      runs.push_back({t, 1});
  }
  const cpu::KvCodecKernels& codec = cpu::kv_codec_kernels();
  const int64_t n_items = static_cast<int64_t>(runs.size()) * p.n_head_kv;
  if (n_items == 0) return;
  pool_.parallel_for(n_items, 1, [&](int64_t b, int64_t e, int) {
    for (int64_t item = b; item < e; ++item) {
      const Run& r = runs[static_cast<size_t>(item / p.n_head_kv)];
      const int32_t g = static_cast<int32_t>(item % p.n_head_kv), s = batch.seq[r.first];
      const AttentionScoreSink& sk = sinks[static_cast<size_t>(s)];
      cpu::ScoreJob job;
      job.q = q + r.first * q_row + static_cast<int64_t>(g) * group * p.head_dim;
      job.q_stride = q_row;
      job.pos = batch.pos + r.first;
      job.n_q = r.n;
      job.group = group;
      job.kv_head = g;
      job.block_table = batch.block_tables[static_cast<size_t>(s)];
      job.scale = p.scale;
      job.softcap = p.softcap;
      job.sinks = p.sinks ? p.sinks + static_cast<int64_t>(g) * group : nullptr;
      job.acc = sk.acc + static_cast<int64_t>(g) * sk.n_keys;
      job.n_keys = sk.n_keys;
      for (int32_t i = 0; i < r.n; ++i)
        STRATA_CHECK(job.pos[i] / kv.block_size < batch.n_blocks[static_cast<size_t>(s)],
                     "position beyond block table");
      cpu::attention_scores_head(job, kv, codec);
    }
  });
}

void CpuBackend::move_kv_tokens(const KvLayerView& kv, const KvTokenMove* moves, int64_t n) {
  STRATA_CHECK(cpu::kv_tokens_addressable(kv), "KV eviction needs a K and V type other than KIVI");
  const int64_t n_slots = static_cast<int64_t>(kv.n_blocks) * kv.block_size;
  for (int64_t i = 0; i < n; ++i)
    STRATA_CHECK(moves[i].src >= 0 && moves[i].src < n_slots && moves[i].dst >= 0 && moves[i].dst < n_slots &&
                     moves[i].head < kv.n_head_kv,
                 "KV token move out of range");
  // Heads are independent tiles: one thread per head keeps each head's moves in order.
  pool_.parallel_for(kv.n_head_kv, 1, [&](int64_t b, int64_t e, int) {
    for (int64_t g = b; g < e; ++g)
      for (int64_t i = 0; i < n; ++i)
        if (moves[i].head < 0 || moves[i].head == g)
          cpu::move_token(kv, static_cast<int32_t>(g), moves[i].src, moves[i].dst);
  });
}

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int n_threads) {
  return std::make_unique<CpuBackend>(n_threads);
}

}  // namespace strata
