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
#include "backend/cpu/matmul.h"
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

  void rope(float* x, const int32_t* pos, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
            const RopeParams& p) override {
    STRATA_CHECK(p.n_rot > 0 && p.n_rot % 2 == 0 && p.n_rot <= head_dim);
    const auto& k = cpu::op_kernels();
    const float* table = rope_table(p, pos, n_tokens);
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

  const float* rope_table(const RopeParams& p, const int32_t* pos, int64_t n_tokens);

  ThreadPool pool_;
  // (cos, sin) pairs per position for the rope parameters in use: [n_positions, n_rot / 2, 2].
  std::vector<float> rope_cache_;
  RopeParams rope_cache_params_;
  int64_t rope_cache_positions_ = 0;
};

// Rotation frequencies with llama3 / linear scaling, computed in double once per position.
const float* CpuBackend::rope_table(const RopeParams& p, const int32_t* pos, int64_t n_tokens) {
  int32_t max_pos = 0;
  for (int64_t t = 0; t < n_tokens; ++t) {
    STRATA_CHECK(pos[t] >= 0, "negative position");
    max_pos = std::max(max_pos, pos[t]);
  }
  const bool same = rope_cache_params_.style == p.style && rope_cache_params_.n_rot == p.n_rot &&
                    rope_cache_params_.freq_base == p.freq_base && rope_cache_params_.scaling == p.scaling &&
                    rope_cache_params_.factor == p.factor &&
                    rope_cache_params_.llama3_low_freq_factor == p.llama3_low_freq_factor &&
                    rope_cache_params_.llama3_high_freq_factor == p.llama3_high_freq_factor &&
                    rope_cache_params_.llama3_original_ctx == p.llama3_original_ctx &&
                    rope_cache_params_.freq_factors == p.freq_factors;
  if (same && max_pos < rope_cache_positions_) return rope_cache_.data();
  const int64_t n_pos = std::max<int64_t>(max_pos + 1, same ? rope_cache_positions_ * 2 : 256);
  const int half = p.n_rot / 2;
  std::vector<double> freq(half);
  for (int i = 0; i < half; ++i) {
    double f = std::pow(static_cast<double>(p.freq_base), -2.0 * i / p.n_rot);
    if (p.scaling == RopeParams::Scaling::Linear) {
      f /= p.factor;
    } else if (p.scaling == RopeParams::Scaling::Llama3) {
      const double low_wavelen = p.llama3_original_ctx / p.llama3_low_freq_factor;
      const double high_wavelen = p.llama3_original_ctx / p.llama3_high_freq_factor;
      const double wavelen = 2.0 * M_PI / f;
      if (wavelen > low_wavelen) {
        f /= p.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (p.llama3_original_ctx / wavelen - p.llama3_low_freq_factor) /
                              (p.llama3_high_freq_factor - p.llama3_low_freq_factor);
        f = (1.0 - smooth) * f / p.factor + smooth * f;
      }
    }
    if (p.freq_factors) f /= p.freq_factors[i];
    freq[i] = f;
  }
  rope_cache_.resize(static_cast<size_t>(n_pos) * p.n_rot);
  for (int64_t q = 0; q < n_pos; ++q)
    for (int i = 0; i < half; ++i) {
      const double theta = static_cast<double>(q) * freq[i];
      rope_cache_[q * p.n_rot + 2 * i] = static_cast<float>(std::cos(theta));
      rope_cache_[q * p.n_rot + 2 * i + 1] = static_cast<float>(std::sin(theta));
    }
  rope_cache_params_ = p;
  rope_cache_positions_ = n_pos;
  return rope_cache_.data();
}

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
  const int64_t n_items = static_cast<int64_t>(spans.size()) * p.n_head_kv;
  auto run_item = [&](int64_t item) {
    const Span& sp = spans[item / p.n_head_kv];
    const int32_t g = static_cast<int32_t>(item % p.n_head_kv);
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
    for (int32_t i = 0; i < sp.n; ++i)
      STRATA_CHECK(batch.pos[sp.first + i] / kv.block_size < batch.n_blocks[s],
                   "position beyond block table");
    cpu::attention_chunk(c, kv, isa);
  };
  if (n_items == 1) {
    run_item(0);
    return;
  }
  pool_.parallel_for(n_items, 1, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) run_item(i);
  });
}

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int n_threads) {
  return std::make_unique<CpuBackend>(n_threads);
}

}  // namespace strata
