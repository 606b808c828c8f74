// Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434), absorbed form.
//
// Each token's keys and values are the low-rank latent c = norm(W_kv_a x)[0:kv_lora] and one
// decoupled rotary key k_r shared by all heads. The cache stores just the row [c, rope(k_r)]
// (kv_lora + qk_rope values per token and layer, for all heads). Head h's key on its no-rope part
// is k_b[h]^T c, so its score q_nope . (k_b[h]^T c) = (k_b[h] q_nope) . c: the query is mapped
// into the latent space once (q_abs = [k_b[h] q_nope, rope(q_r)]) and attention runs as MQA
// over the latent rows; its output per head is a latent vector (the values are c), mapped to the
// head's value through v_b[h].
#include "model/decoder_blocks.h"

namespace strata {

void mla_block(BlockContext& ctx, const AttentionWeights& w, const KvLayerView& kv, const float* in,
               float* out) {
  Backend& be = ctx.backend;
  const ModelConfig& c = ctx.c;
  const MlaConfig& m = c.mla;
  ForwardScratch& s = ctx.s;
  const int64_t n = ctx.n, H = c.n_head, nope = m.qk_nope, R = m.qk_rope, L = m.kv_lora_rank;
  const int64_t qh = nope + R;    // query width per head before absorption
  const int64_t dh = c.head_dim;  // latent row: L + R
  float* q = fp(s.q);             // [n, H, nope + R]
  float* kvr = fp(s.k);           // [n, L + R] the latent rows
  float* part = fp(s.part);       // [n, H, max(R, L)]
  float* q_abs = fp(s.q_abs);     // [n, H, L + R]
  if (w.wq_a) {                   // V3: queries through their own low-rank bottleneck
    float* qa = fp(s.q_a);
    ctx.timed(OpProfile::Matmul, [&] { be.matmul(*w.wq_a, in, qa, n); });
    ctx.timed(OpProfile::Norm, [&] { be.rms_norm(qa, fp(w.q_a_norm), qa, n, m.q_lora_rank, c.rms_eps); });
    ctx.timed(OpProfile::Matmul, [&] { be.matmul(*w.wq_b, qa, q, n); });
  } else {
    ctx.timed(OpProfile::Matmul, [&] { be.matmul(*w.wq, in, q, n); });
  }
  ctx.timed(OpProfile::Matmul, [&] { be.matmul(*w.wkv_a, in, kvr, n); });
  // Normalize c (the first L of each latent row) and rotate k_r (the last R), via contiguous copies.
  ctx.timed(OpProfile::Norm, [&] {
    be.copy_rows(kvr, dh, part, L, n, L);
    be.rms_norm(part, fp(w.kv_a_norm), part, n, L, c.rms_eps);
    be.copy_rows(part, L, kvr, dh, n, L);
  });
  ctx.timed(OpProfile::Rope, [&] {
    be.copy_rows(kvr + L, dh, part, R, n, R);
    be.rope(part, ctx.rope_pos ? ctx.rope_pos : ctx.ab.pos, n, 1, R, c.rope);
    be.copy_rows(part, R, kvr + L, dh, n, R);
    be.copy_rows(q + nope, qh, part, R, n * H, R);
    be.rope(part, ctx.rope_pos ? ctx.rope_pos : ctx.ab.pos, n, H, R, c.rope);
    be.copy_rows(part, R, q_abs + L, dh, n * H, R);
  });
  // q_abs[t, h, 0:L] = k_b[h] q_nope[t, h]: the per-head matrices as a stack, one per slot.
  const int32_t* heads = ip(s.head_ids);
  ctx.timed(OpProfile::Matmul, [&] {
    be.matmul_stack(*w.k_b, heads, n, H, q, SlotLayout{H * qh, qh}, q_abs, SlotLayout{H * dh, dh});
  });
  // The latent row is both the key and (its first L values) the value. With v_in_k the cache
  // keeps it once; without, it is stored as V too and the output carries L + R values per head,
  // of which v_b reads the first L.
  ctx.timed(OpProfile::Attention, [&] { be.store_kv(kv, kvr, kvr, ctx.ab); });
  AttentionParams ap;
  ap.n_head = static_cast<int32_t>(H);
  ap.n_head_kv = 1;
  ap.head_dim = static_cast<int32_t>(dh);
  ap.head_dim_v = kv.v_in_k ? static_cast<int32_t>(L) : 0;
  ap.scale = c.attn_scale;
  const int64_t dv = kv.v_in_k ? L : dh;
  float* attn = fp(s.attn);  // [n, H, dv]
  ctx.timed(OpProfile::Attention, [&] { be.attention(q_abs, kv, ctx.ab, ap, attn); });
  float* vh = fp(s.v_heads);  // [n, H, v_head]
  ctx.timed(OpProfile::Matmul, [&] {
    be.matmul_stack(*w.v_b, heads, n, H, attn, SlotLayout{H * dv, dv}, vh,
                    SlotLayout{H * m.v_head, m.v_head});
  });
  ctx.timed(OpProfile::Matmul, [&] { be.matmul(*w.wo, vh, out, n); });
}

}  // namespace strata
