// Grouped-query attention of the Llama family and its relatives (qwen2/3, gemma2/3, phi3, olmo2,
// gpt-oss): projections (fused in phi3), biases, q/k RMSNorm per head or over all heads,
// rotation, the KV cache, attention with the layer's window / soft-cap / sinks, output projection.
#include "model/decoder_blocks.h"

namespace strata {

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
  ctx.timed(OpProfile::Rope, [&] { be.rope(q, ctx.ab.pos, n, c.n_head, c.head_dim, rope); });
  ctx.timed(OpProfile::Rope, [&] { be.rope(k, ctx.ab.pos, n, c.n_head_kv, c.head_dim, rope); });
  ctx.timed(OpProfile::Attention, [&] { be.store_kv(kv, k, v, ctx.ab); });

  AttentionParams ap;
  ap.n_head = static_cast<int32_t>(c.n_head);
  ap.n_head_kv = static_cast<int32_t>(c.n_head_kv);
  ap.head_dim = static_cast<int32_t>(c.head_dim);
  ap.scale = c.attn_scale;
  ap.sliding_window = static_cast<int32_t>(c.window(il));
  ap.softcap = c.attn_softcap;
  ap.sinks = w.sinks.empty() ? nullptr : w.sinks.data();
  float* attn = fp(s.attn);
  ctx.timed(OpProfile::Attention, [&] { be.attention(q, kv, ctx.ab, ap, attn); });
  ctx.timed(OpProfile::Matmul, [&] { be.matmul(*w.wo, attn, out, n); });
  if (w.bo) ctx.timed(OpProfile::Elementwise, [&] { be.add_bias(out, fp(w.bo), n, c.n_embd); });
}

}  // namespace strata
