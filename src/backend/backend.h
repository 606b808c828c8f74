// The compute backend interface: device memory, prepared weights and the op set the decoder needs.
//
// The model and the engine only talk to this interface; the CPU backend (backend/cpu) implements
// it and a GPU backend can be added beside it. Activation pointers passed to ops point into
// memory from Backend::alloc (host memory for the CPU backend, device memory elsewhere); the
// small per-batch index arrays (positions, slots, block tables) are host memory the backend
// copies as it needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/kv_layout.h"
#include "core/check.h"
#include "core/tensor_type.h"

namespace strata {

struct TensorInfo;

class BackendBuffer {
 public:
  virtual ~BackendBuffer() = default;
  virtual void* data() = 0;
  virtual size_t size() const = 0;
};

// A weight matrix [n_out, n_in] in the layout this backend's matmul wants.
class BackendMatrix {
 public:
  virtual ~BackendMatrix() = default;
  virtual TensorType type() const = 0;
  virtual int64_t n_in() const = 0;
  virtual int64_t n_out() const = 0;
  // Bytes read per full pass over the weights (for bandwidth accounting).
  virtual size_t weight_bytes() const = 0;
  // Bytes of this backend's own copy of the weights (0 when it reads the source in place).
  virtual size_t owned_bytes() const = 0;
};

// Stacked weight matrices of one shape, [n_mats, n_out, n_in] (GGUF ne = {n_in, n_out, n_mats}):
// the routed experts of a MoE layer (*_exps tensors), or MLA's per-head k_b / v_b projections.
class BackendMatrixStack {
 public:
  virtual ~BackendMatrixStack() = default;
  virtual TensorType type() const = 0;
  virtual int64_t n_mats() const = 0;
  virtual int64_t n_in() const = 0;
  virtual int64_t n_out() const = 0;
  // Bytes read per full pass over one matrix (for bandwidth accounting of the active experts).
  virtual size_t matrix_bytes() const = 0;
  // Bytes of this backend's own copy of all matrices (0 when it reads the source in place).
  virtual size_t owned_bytes() const = 0;
};

// Gated activations out = act(gate) * up of the feed-forward networks.
enum class GluKind {
  Silu,       // swiglu: silu(g) * u (llama, qwen, phi, deepseek)
  GeluTanh,   // geglu: gelu_tanh(g) * u (gemma)
  SwigluOai,  // gpt-oss: g' = min(g, 7); u' = clamp(u, -7, 7); g' * sigmoid(1.702 g') * (u' + 1)
};

// How a MoE router turns the logits of one token into n_used (expert, weight) pairs.
enum class MoeGating {
  Softmax,        // p = softmax(logits); weights = p of the top n_used
  Sigmoid,        // p = sigmoid(logits); weights = p of the top n_used (deepseek v3)
  SoftmaxWeight,  // top n_used by logit; weights = softmax over just those (gpt-oss)
};

struct MoeRouting {
  int32_t n_experts = 0;
  int32_t n_used = 0;
  MoeGating gating = MoeGating::Softmax;
  bool norm_weights = false;   // divide the selected weights by their sum
  float weights_scale = 1.0f;  // then multiply them by this
  // Added to p for choosing the experts only, never to the weights (deepseek v3's
  // exp_probs_b): [n_experts] host memory, or null.
  const float* selection_bias = nullptr;
  // Expert groups (deepseek v3): the experts are n_groups consecutive groups; only the
  // n_groups_used groups with the largest sum of their two best (biased) scores are eligible.
  int32_t n_groups = 1;
  int32_t n_groups_used = 1;
};

// Where row (token t, slot s) of a [n_tokens, n_slots, width] activation starts: at
// base + t * token_stride + s * slot_stride floats. slot_stride 0 broadcasts one row per token.
struct SlotLayout {
  int64_t token_stride = 0;
  int64_t slot_stride = 0;
};

enum class RopeStyle {
  Interleaved,  // rotate pairs (x[2i], x[2i+1]): GGUF llama layout
  NeoX,         // rotate halves (x[i], x[i + d/2]): qwen2, HF layout
};

struct RopeParams {
  RopeStyle style = RopeStyle::Interleaved;
  int n_rot = 0;  // leading dims of each head that rotate (== head_dim for the Llama family)
  float freq_base = 10000.0f;
  // Frequency scaling: linear (positions divided by factor), llama3 (per-frequency blend) or
  // YaRN (per-frequency blend of interpolated and original angles, ramped between the
  // dimensions that turn beta_fast and beta_slow times over the original context).
  enum class Scaling { None, Linear, Llama3, Yarn } scaling = Scaling::None;
  float factor = 1.0f;
  float llama3_low_freq_factor = 1.0f;
  float llama3_high_freq_factor = 4.0f;
  int llama3_original_ctx = 8192;
  int yarn_original_ctx = 4096;
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;
  float yarn_ext_factor = 1.0f;  // weight of the ramp (0: plain linear interpolation)
  // Multiplies every cos and sin (YaRN's magnitude correction, LongRoPE's attention factor).
  float attn_factor = 1.0f;
  // Optional per-frequency divisors (GGUF rope_freqs.weight, Llama 3.1; phi3's LongRoPE
  // rope_factors_long/short): [n_rot / 2], host memory that outlives the backend's use of it.
  const float* freq_factors = nullptr;
};

// KIVI's full-precision window (kv_layout.h): F16 copies of the blocks being filled, for the KIVI
// types, which quantize a whole block at once. store_kv and copy_kv_block maintain it, attention
// reads a staged block from here instead of the cache. A block is staged from its first write
// until its last token is written, then quantized into the cache; when all slots are taken, the
// least recently written one is quantized early (over the tokens it has) to free its slot, and
// brought back (dequantized) if its block is written again.
struct KvStaging {
  int32_t n_slots = 0;
  void* k = nullptr;  // [n_slots, n_head_kv, head_dim, block_size] f16 (as an F16 K tile), or null
  void* v = nullptr;  // [n_slots, n_head_kv, block_size, head_dim_v] f16, or null
  std::vector<int32_t> slot_of_block;  // [n_blocks] staging slot of each block, -1: none
  std::vector<int32_t> block_of_slot;  // [n_slots] the block a slot holds, -1: free
  std::vector<int32_t> n_written;      // [n_slots] 1 + the highest token offset written
  std::vector<uint64_t> last_write;    // [n_slots] clock of the slot's last write
  uint64_t clock = 0;
};

// The KV cache of one layer: fixed-size blocks in backend memory. Each (block b, kv head g) owns
// one K tile at k + (b * n_head_kv + g) * k_layout().bytes and one V tile at
// v + (b * n_head_kv + g) * v_layout().bytes — the tiles of the attention kernel. kv_layout.h
// defines each type's tile: float K is transposed (element e, token t at e * block_size + t), so a
// query's scores over the block's keys are head_dim vector multiply-adds across the keys; V and
// quantized K are token rows.
struct KvLayerView {
  void* k = nullptr;  // [n_blocks, n_head_kv] K tiles (head_dim wide)
  void* v = nullptr;  // [n_blocks, n_head_kv] V tiles (head_dim_v wide); null when v_in_k
  KvType k_type = KvType::F16;
  KvType v_type = KvType::F16;
  int32_t n_blocks = 0;
  int32_t block_size = 16;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;    // of K (and Q)
  int32_t head_dim_v = 0;  // of V; 0: same as head_dim
  // MLA (deepseek2): V is the first head_dim_v elements of each cached K row (the latent), so
  // nothing is stored for V and `v` is null.
  bool v_in_k = false;
  // Quantized K: store_kv multiplies each head's K, and attention each head's Q, by the same fixed
  // orthogonal matrix (signed Walsh-Hadamard, kv_rotation in backend/cpu/kv_codec.h) before
  // quantizing K, so scores are unchanged in exact arithmetic while outlier channels are spread
  // over the whole head. Not with v_in_k (V would be read rotated).
  bool rotate_k = false;
  KvStaging* staging = nullptr;  // KIVI K or V: the blocks being filled; else null

  int32_t v_dim() const { return head_dim_v > 0 ? head_dim_v : head_dim; }
  KvTileLayout k_layout() const { return kv_tile_layout(k_type, true, head_dim, block_size); }
  KvTileLayout v_layout() const { return kv_tile_layout(v_type, false, v_dim(), block_size); }
};

// Host-side description of a ragged batch for the attention ops.
struct AttentionBatch {
  int64_t n_tokens = 0;
  const int32_t* pos = nullptr;              // [n_tokens] position of each token in its sequence
  const int32_t* seq = nullptr;              // [n_tokens] index into block_tables
  const int64_t* slot = nullptr;             // [n_tokens] KV slot = block * block_size + offset
  std::vector<const int32_t*> block_tables;  // per sequence: its blocks in position order
  std::vector<int32_t> n_blocks;             // per sequence: entries in its block table
};

struct AttentionParams {
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;        // of Q and K
  int32_t head_dim_v = 0;      // of V and the output; 0: same as head_dim
  float scale = 1.0f;          // usually 1/sqrt(head_dim)
  int32_t sliding_window = 0;  // 0: full causal attention; else keys with pos > p - window
  float softcap = 0.0f;        // gemma2: score = softcap * tanh(score * scale / softcap); 0: off
  // gpt-oss: one learned logit per query head that joins each row's softmax denominator and
  // has no value vector: [n_head] host memory, or null for none.
  const float* sinks = nullptr;
  // StreamingLLM attention sinks (kv/kv_window_policy.h), with a sliding window only: keys at
  // positions [0, n_sink_tokens) stay visible below each query's window and are scored with
  // q_sink (the queries rotated at the sinks' position within the cache) instead of q.
  int32_t n_sink_tokens = 0;
  const float* q_sink = nullptr;  // [n_tokens, n_head, head_dim], or null when n_sink_tokens is 0
};

// Score-based KV eviction (kv/kv_evict_policy.h): where one sequence of a batch accumulates the
// attention its observation queries give each cached key. Only queries at positions
// [first_pos, end_pos) count; acc[g * n_keys + j] += the softmax probability of key j (cache
// position j <= the query's position), summed over the query heads that read kv head g.
struct AttentionScoreSink {
  float* acc = nullptr;  // [n_head_kv, n_keys] of one layer, or null: this sequence is not scored
  int32_t n_keys = 0;
  int32_t first_pos = 0, end_pos = 0;
};

// One token's K and V (every kv head) moved from slot src to slot dst of a layer's cache, or of
// kv head `head` only (>= 0): the compaction after an eviction.
struct KvTokenMove {
  int64_t src = 0, dst = 0;  // slots: block * block_size + offset
  int32_t head = -1;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual int n_threads() const = 0;

  virtual std::unique_ptr<BackendBuffer> alloc(size_t bytes) = 0;
  // t: a 2-D weight [n_out, n_in] (ne = {n_in, n_out}); its data must outlive the result.
  virtual std::unique_ptr<BackendMatrix> prepare_matrix(const TensorInfo& t) = 0;
  // W8A8 (Strata-only, made at load; backend/cpu/w8a8_matrix.h): t, a 2-D F32/F16/BF16/Q8_0 weight,
  // requantized to int8 with one scale per output channel; matmul quantizes the activations to int8
  // per token (static_act_absmax 0) or with the fixed per-tensor absmax from calibration. type()
  // of the result is t's. Throws strata::Error for another type or shape, or a backend without it.
  virtual std::unique_ptr<BackendMatrix> prepare_w8a8_matrix(const TensorInfo& t, float static_act_absmax) {
    (void)t;
    (void)static_act_absmax;
    STRATA_THROW("backend ", name(), " has no W8A8 kernels");
  }

  // out[i, :] = table row ids[i] as f32. table: [n_rows, n_embd] of any storage type.
  virtual void get_rows(const TensorInfo& table, const int32_t* ids, int64_t n_ids,
                        float* out /* [n_ids, n_embd] */) = 0;
  // y[t, o] = sum_i w[o, i] * x[t, i]
  virtual void matmul(const BackendMatrix& w, const float* x /* [n_tokens, n_in] */,
                      float* y /* [n_tokens, n_out] */, int64_t n_tokens) = 0;
  // t: a 3-D weight [n_mats, n_out, n_in] (ne = {n_in, n_out, n_mats}); its data must outlive
  // the result.
  virtual std::unique_ptr<BackendMatrixStack> prepare_matrix_stack(const TensorInfo& t) = 0;

  // y[r, :] = x[r, :] / rms(x[r, :]) * w. Rows may be attention heads (per-head q/k norm:
  // n_rows = n_tokens * n_heads, n = head_dim); in place (y == x) is allowed.
  virtual void rms_norm(const float* x /* [n_rows, n] */, const float* w /* [n] */,
                        float* y /* [n_rows, n] */, int64_t n_rows, int64_t n, float eps) = 0;
  // y[r, :] += b
  virtual void add_bias(float* y /* [n_rows, n] */, const float* b /* [n] */, int64_t n_rows, int64_t n) = 0;
  // y += x
  virtual void add(float* y /* [n] */, const float* x /* [n] */, int64_t n) = 0;
  // out = silu(gate) * up
  virtual void swiglu(const float* gate /* [n] */, const float* up /* [n] */, float* out /* [n] */,
                      int64_t n) = 0;
  // out[r, :] = act(gate[r, :]) * up[r, :] over n elements; gate and up rows are in_stride
  // floats apart (phi3's fused gate/up: the two halves of one [n_rows, 2n] matrix).
  virtual void glu(GluKind kind, const float* gate /* [n_rows, in_stride] */,
                   const float* up /* [n_rows, in_stride] */, int64_t in_stride, float* out /* [n_rows, n] */,
                   int64_t n_rows, int64_t n) = 0;
  // x = cap * tanh(x / cap) (gemma2's final-logit soft-capping).
  virtual void softcap(float* x /* [n] */, int64_t n, float cap) = 0;
  // x *= s (gemma's embedding scaling by sqrt(n_embd)).
  virtual void scale(float* x /* [n] */, int64_t n, float s) = 0;
  // dst[r, 0:n] = src[r, 0:n] with row strides in floats (splitting and joining head parts).
  virtual void copy_rows(const float* src /* [n_rows, src_stride] */, int64_t src_stride,
                         float* dst /* [n_rows, dst_stride] */, int64_t dst_stride, int64_t n_rows,
                         int64_t n) = 0;

  // Top-k expert choice per token. ids and weights are backend memory.
  virtual void moe_route(const float* logits /* [n_tokens, n_experts] */, int64_t n_tokens,
                         const MoeRouting& r, int32_t* ids /* [n_tokens, n_used] */,
                         float* weights /* [n_tokens, n_used] */) = 0;
  // y(t, s) = w[ids[t, s]] * x(t, s): rows grouped by matrix, so each selected matrix is read
  // once per call however many tokens chose it. x rows have n_in floats, y rows n_out.
  virtual void matmul_stack(const BackendMatrixStack& w, const int32_t* ids /* [n_tokens, n_slots] */,
                            int64_t n_tokens, int64_t n_slots, const float* x, SlotLayout x_layout, float* y,
                            SlotLayout y_layout) = 0;
  // y[t, s, :] += bias[ids[t, s], :] (gpt-oss's per-expert biases).
  virtual void add_stack_bias(float* y /* [n_tokens, n_slots, n] */, const float* bias /* [n_mats, n] */,
                              const int32_t* ids /* [n_tokens, n_slots] */, int64_t n_tokens, int64_t n_slots,
                              int64_t n) = 0;
  // out[t, :] = sum_s weights[t, s] * y[t, s, :] (combining the experts of each token).
  virtual void weighted_sum(const float* y /* [n_tokens, n_slots, n] */,
                            const float* weights /* [n_tokens, n_slots] */, int64_t n_tokens, int64_t n_slots,
                            int64_t n, float* out /* [n_tokens, n] */) = 0;

  // Rotates each head of x in place by its token's position.
  virtual void rope(float* x /* [n_tokens, n_heads, head_dim] */, const int32_t* pos /* [n_tokens] */,
                    int64_t n_tokens, int64_t n_heads, int64_t head_dim, const RopeParams& p) = 0;
  // Writes each token's K and V into its slot of the layer's cache (v is not read, and may be
  // null, when kv.v_in_k).
  virtual void store_kv(const KvLayerView& kv, const float* k /* [n_tokens, n_head_kv, head_dim] */,
                        const float* v /* [n_tokens, n_head_kv, head_dim_v] */,
                        const AttentionBatch& batch) = 0;
  // Copies block `src` of the layer's K and V to block `dst` (copy-on-write of a shared block).
  virtual void copy_kv_block(const KvLayerView& kv, int32_t src, int32_t dst) = 0;
  // Eviction scores: for each token of the batch whose sequence has a sink (sinks[batch.seq[t]]),
  // adds its attention probabilities over its sequence's cached keys (as attention computes
  // them: scale, soft-cap and learned sinks; no window) to the sink. An extra pass over the
  // observation queries only, so attention itself stays the fused kernel. The default throws.
  virtual void attention_scores(const float* q /* [n_tokens, n_head, head_dim] */, const KvLayerView& kv,
                                const AttentionBatch& batch, const AttentionParams& p,
                                const std::vector<AttentionScoreSink>& sinks /* [n_seqs] */) {
    (void)q, (void)kv, (void)batch, (void)p, (void)sinks;
    STRATA_THROW("backend ", name(), " has no KV eviction kernels");
  }
  // Executes the moves in order (a move may overwrite a slot an earlier move read). The default
  // throws.
  virtual void move_kv_tokens(const KvLayerView& kv, const KvTokenMove* moves, int64_t n) {
    (void)kv, (void)moves, (void)n;
    STRATA_THROW("backend ", name(), " has no KV eviction kernels");
  }
  // Causal attention of every token over its own sequence's cached keys/values (positions
  // <= its own, within the sliding window), tiled with an online softmax. Query head h reads
  // kv head h / (n_head / n_head_kv).
  virtual void attention(const float* q /* [n_tokens, n_head, head_dim] */, const KvLayerView& kv,
                         const AttentionBatch& batch, const AttentionParams& p,
                         float* out /* [n_tokens, n_head, head_dim_v] */) = 0;
};

// The CPU backend with a persistent pool of n_threads (0: all available cores).
std::unique_ptr<Backend> make_cpu_backend(int n_threads);

}  // namespace strata
