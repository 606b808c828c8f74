// Grouped-query attention of the Llama family and its relatives (qwen2/3, gemma2/3, phi3, olmo2,
// gpt-oss): projections (fused in phi3), biases, q/k RMSNorm per head or over all heads,
// rotation, the KV cache, attention with the layer's window / soft-cap / sinks, output projection.
#include <algorithm>
#include <vector>

#include "model/decoder_blocks.h"

namespace strata {
namespace {

// The queries for the attention sinks: q (not yet rotated) rotated at min(pos, sinks + window -
// 1), the position a query has within StreamingLLM's rolling cache, so each sink is seen at its
// distance within the cache while the window's keys keep their true distance.
const float* rotate_sink_queries(BlockContext& ctx, const float* q /* [n, n_head * head_dim] */,
                                 const RopeParams& rope, const KvWindowPolicy& policy) {
  const ModelConfig& c = ctx.c;
  ForwardScratch& s = ctx.s;
  const int64_t nq = c.n_embd_q();
  if (!s.q_sink) s.q_sink = ctx.backend.alloc(static_cast<size_t>(s.cap * nq) * sizeof(float));
  s.sink_pos.resize(static_cast<size_t>(s.cap));
  const int32_t cap = policy.sink_rotation_cap();
  for (int64_t t = 0; t < ctx.n; ++t) s.sink_pos[static_cast<size_t>(t)] = std::min(ctx.ab.pos[t], cap);
  float* qs = fp(s.q_sink);
  ctx.timed(OpProfile::Rope, [&] {
    ctx.backend.copy_rows(q, nq, qs, nq, ctx.n, nq);
    ctx.backend.rope(qs, s.sink_pos.data(), ctx.n, c.n_head, c.head_dim, rope);
  });
  return qs;
}

// Score-based eviction (kv/kv_evict_policy.h): this layer's share of each scored sequence's
// accumulator gets the attention of its observation queries, in a pass of its own.
void score_observation_queries(BlockContext& ctx, int64_t il, const float* q /* [n, n_head * head_dim] */,
                               const KvLayerView& kv, const AttentionParams& ap) {
  std::vector<AttentionScoreSink> layer = *ctx.score_sinks;
  for (AttentionScoreSink& sk : layer)
    if (sk.acc) sk.acc += il * ctx.c.n_head_kv * sk.n_keys;
  ctx.timed(OpProfile::Attention, [&] { ctx.backend.attention_scores(q, kv, ctx.ab, ap, layer); });
}

}  // namespace

void attention_block(BlockContext& ctx, const AttentionWeights& w, int64_t il, const KvLayerView& kv,
                     const float* in, float* out) {
  Backend& be = ctx.backend;
  const ModelConfig& c = ctx.c;
  ForwardScratch& s = ctx.s;
  const int64_t n = ctx.n, nq = c.n_embd_q(), nkv = c.n_embd_kv();
  float* q = fp(s.q);
  float* k = fp(s.k);
  float* v = fp(s.v);
  if (w.wqkv) {  // phi3: one projection, rows [q | k | v]
    float* qkv = fp(s.qkv);
    const int64_t width = nq + 2 * nkv;
    ctx.timed(OpProfile::Matmul, [&] { be.matmul(*w.wqkv, in, qkv, n); });
    ctx.timed(OpProfile::Elementwise, [&] {
      be.copy_rows(qkv, width, q, nq, n, nq);
      be.copy_rows(qkv + nq, width, k, nkv, n, nkv);
      be.copy_rows(qkv + nq + nkv, width, v, nkv, n, nkv);
    });
  } else {
    ctx.timed(OpProfile::Matmul, [&] { be.matmul(*w.wq, in, q, n); });
    ctx.timed(OpProfile::Matmul, [&] { be.matmul(*w.wk, in, k, n); });
    ctx.timed(OpProfile::Matmul, [&] { be.matmul(*w.wv, in, v, n); });
  }
  if (w.bq) {
    ctx.timed(OpProfile::Elementwise, [&] {
      be.add_bias(q, fp(w.bq), n, nq);
      be.add_bias(k, fp(w.bk), n, nkv);
      be.add_bias(v, fp(w.bv), n, nkv);
    });
  }
  if (w.q_norm) {
    // Per head: rows of head_dim (qwen3, gemma3); olmo2: one row per token over all heads.
    const bool per_head = c.info->qk_norm == QkNorm::PerHead;
    ctx.timed(OpProfile::Norm, [&] {
      be.rms_norm(q, fp(w.q_norm), q, per_head ? n * c.n_head : n, per_head ? c.head_dim : nq, c.rms_eps);
      be.rms_norm(k, fp(w.k_norm), k, per_head ? n * c.n_head_kv : n, per_head ? c.head_dim : nkv, c.rms_eps);
    });
  }
  const RopeParams& rope = c.rope_for(il);
  const LayerWindow lw = layer_window(ctx.kv_window, c.window(il));
  const float* q_sink = lw.sinks > 0 ? rotate_sink_queries(ctx, q, rope, ctx.kv_window) : nullptr;
  const int32_t* rope_pos = ctx.rope_pos ? ctx.rope_pos : ctx.ab.pos;
  ctx.timed(OpProfile::Rope, [&] { be.rope(q, rope_pos, n, c.n_head, c.head_dim, rope); });
  ctx.timed(OpProfile::Rope, [&] { be.rope(k, rope_pos, n, c.n_head_kv, c.head_dim, rope); });
  ctx.timed(OpProfile::Attention, [&] { be.store_kv(kv, k, v, ctx.ab); });

  AttentionParams ap;
  ap.n_head = static_cast<int32_t>(c.n_head);
  ap.n_head_kv = static_cast<int32_t>(c.n_head_kv);
  ap.head_dim = static_cast<int32_t>(c.head_dim);
  ap.scale = c.attn_scale;
  ap.sliding_window = lw.window;
  ap.n_sink_tokens = lw.sinks;
  ap.q_sink = q_sink;
  ap.softcap = c.attn_softcap;
  ap.sinks = w.sinks.empty() ? nullptr : w.sinks.data();
  float* attn = fp(s.attn);
  ctx.timed(OpProfile::Attention, [&] { be.attention(q, kv, ctx.ab, ap, attn); });
  if (ctx.score_sinks) score_observation_queries(ctx, il, q, kv, ap);
  ctx.timed(OpProfile::Matmul, [&] { be.matmul(*w.wo, attn, out, n); });
  if (w.bo) ctx.timed(OpProfile::Elementwise, [&] { be.add_bias(out, fp(w.bo), n, c.n_embd); });
}

}  // namespace strata
