// Derivations of the embedding (small model: s, large model: L; d = n_embd, hd = head_dim).
//
// Residual stream. The large residual x_L is the small x_s in dimensions [0, d_s) and exactly 0
// elsewhere. It stays so: token_embd has zero padding columns, and every matrix that writes into
// the residual (attn_output, ffn_down) has zero rows beyond d_s.
//
// RMSNorm. y = x / sqrt(mean(x^2) + eps) * w. Over the wider residual
//   mean_L(x^2) = (1/d_L) sum x_s^2 = r * mean_s(x^2),   r = d_s / d_L,
// so sqrt(mean_L + eps_L) = sqrt(r) * sqrt(mean_s + eps_L / r). Choosing eps_L = r * eps_s makes it
// sqrt(r) * sqrt(mean_s + eps_s): the large norm divides by sqrt(r) times the small one's
// denominator, and w_L = sqrt(r) * w_s (padding entries 0) gives y_L = y_s exactly. The weights
// shrink by sqrt(d_s / d_L) and epsilon by d_s / d_L, as the issue says; eps is one key for all
// norms, which is right because every norm of the large model sees the same kind of residual.
// (When r is a power of two, mean and eps scale exactly in float; only sqrt(r) rounds.)
//
// Attention scale. Scores are q.k / sqrt(hd). The padding dimensions of real heads are zero in q
// and k, so q_L.k_L = q_s.k_s; the large model divides by sqrt(hd_L) instead of sqrt(hd_s), so the
// real rows of W_q (and b_q) are multiplied by sqrt(hd_L / hd_s). Rope is linear per pair, so
// scaling before the rotation is the same as after. The factor is exact (a power of two) when
// hd_L / hd_s is a power of four: then the quantized W_q is exactly the scaled quantized small
// W_q; otherwise quantization sees the scaled values (fp16 scales round differently by <= 2^-11).
//
// RoPE. Pair i of a head rotates with theta_i = base^(-2i / hd) (llama: interleaved pairs
// (2i, 2i+1); qwen2: NeoX pairs (i, i + hd/2)). The small head's pair i is placed on the large
// head's pair i, and theta_i,L = base_L^(-2i/hd_L) equals base_s^(-2i/hd_s) for every i iff
// base_L = base_s^(hd_L / hd_s) (10000^4 = 1e16 for head_dim 16 -> 64; 10000^8 = 1e32 for 8 -> 64:
// large, but a finite float, which is all GGUF and llama.cpp need; llama.cpp requires
// rope.dimension_count == head_dim for llama, so the base is the only knob). Padding pairs rotate
// zeros. Interleaved: the small head's dims [0, hd_s) go to [0, hd_s). NeoX: its first half goes to
// [0, hd_s/2) and its second half to [hd_L/2, hd_L/2 + hd_s/2), so the pairs (i, i + hd_s/2) land
// on (i, i + hd_L/2). Linear and llama3 rope scaling act on each theta_i alone, so they carry over.
//
// GQA. Small KV head g goes to large KV head g, and its r_s = n_head_s / n_head_kv_s query heads
// keep their order at the start of the large group of g (r_L query heads per KV head): small query
// head h (KV head h / r_s) becomes large head (h / r_s) * r_L + h % r_s. The other heads of each
// group and all heads of unused KV groups are padding heads: random q (and k, v for unused KV
// heads) and zero W_o columns, so what they attend to never reaches the residual.
//
// Values and W_o. A real head's output is sum_t p_t v_t over the large head's dimensions; it is
// exactly 0 wherever the KV head's value rows are 0, so W_o may hold anything in those columns. Two
// layouts:
//  - plain: value rows [0, hd_s) of the KV head carry the small values, the rest 0; W_o's real
//    columns of head h are [0, hd_s) of its slot, the rest 0.
//  - value copies (when hd_s < 32, 32 % hd_s == 0): a quantization block of W_o's row holds 32
//    columns = m = 32 / hd_s small heads. In the plain layout such a block of the large W_o would
//    hold one head's columns next to zeros, so it would be quantized with a different scale than
//    the small model's block. Instead, in the slot of head h, span sigma(h) (32 columns) holds the
//    small model's whole block floor(h / m), in the same order, and the KV head's value rows carry
//    a copy of the small values at sigma(h) * 32 + (h % m) * hd_s. Head h's output is then its own
//    values exactly under its own columns of the block and 0 under the other heads' columns of it
//    (those are the block-mates: their products are 0 * w), provided no other copy of the same KV
//    head falls into span sigma(h) at another offset. Copies of heads h' of the same KV head land
//    at (sigma(h'), h' % m); with sigma(h) = (h % r_s) % m, two heads of one KV head share a span
//    only when their offsets h % m agree too (heads of a KV head are consecutive), i.e. when their
//    copies coincide. This needs min(r_s, m) spans per slot: min(r_s, m) <= hd_L / 32. The other
//    spans of the slot are zero in W_o. Every block of the large W_o is then either zero or exactly
//    a block of the small W_o, so quantizing it quantizes the small W_o's blocks exactly (the
//    activations of the block are grouped differently, one real head and zeros instead of m heads,
//    so 8-bit activation quantization inside quantized dot products still differs slightly).
//
// FFN. Real units [0, f_s) carry the small gate/up rows and ffn_down columns; the other ffn_down
// columns are 0 and the matching gate/up rows random (silu(random) * random * 0 = 0). Units
// [f_s, round_up(f_s, 256)) get zero gate/up rows instead: when f_s is not a multiple of a block
// size, a quantization block of ffn_down's real rows holds real columns and padding columns; with
// an affine type (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K) the padding zeros do not dequantize to exactly 0,
// so those units' activations must be 0 themselves (silu(0) * 0 = 0).
//
// Quantization. A real row's real columns always start at a block boundary (column 0 of the row,
// of a head slot or of a span), and the columns after them are zero or block-mates, so blocks never
// straddle real and random values. Where the small row length is a multiple of the block size,
// every block of the large row is either exactly a block of the small row or zero, and blocks are
// quantized independently (no imatrix), so the large file quantizes the real corner exactly as
// quantizing the small model does (W_q: when q_scale is a power of two, see above). Where the small
// rows do not split into the type's blocks, quantizing the small model falls back to another type
// for that tensor (fallback_type), and `synth --from --type T` gives the large real tensor that same
// type (model_embedding.h), so the correspondence still holds. This is what happens for every
// K-quant here: super-blocks are 256 wide and the small rows (stories260K: 64, 172; tinystories656k:
// 128, 384) are not multiples of 256, so the small model has no K-quantized tensor at all (Q4_K ->
// Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K/Q3_K -> Q4_0) and no layout of the large rows could
// reproduce one: a large super-block necessarily holds the 64 or 128 real values next to padding.
// The large file then has its real layers in the fallback type and its padding layers in the
// K-quant. `strata quantize LARGE T`, which knows nothing of the small model, quantizes every large
// row in T: the real corner is exact for the types whose blocks fit the small rows (as above), and
// for the others a K-quant of the real values next to zero sub-blocks, which dequantize to exact
// zeros (the function stays the small model's up to that quantization), but which is no
// quantization the small model has.
#include "model/embedding_layout.h"

#include <cfloat>
#include <cmath>

#include "core/check.h"

namespace strata {
namespace {

void require_fits(const char* what, int64_t small, int64_t large, const std::string& preset) {
  if (small > large)
    STRATA_THROW("the small model's ", what, " (", small, ") is larger than preset '", preset, "' has (",
                 large, ")");
}

// Position in the large head of dimension e of a small head (rope pairs keep their index).
int64_t rope_position(const EmbeddingLayout& L, int64_t e) {
  const int64_t hs = L.small.head_dim;
  if (L.small.rope.style == RopeStyle::Interleaved || e < hs / 2) return e;
  return L.head_dim / 2 + (e - hs / 2);
}

int64_t large_q_head(const EmbeddingLayout& L, int64_t h) {
  const int64_t r_s = L.small.n_head / L.small.n_head_kv, r = L.n_head / L.n_head_kv;
  return (h / r_s) * r + h % r_s;
}

// Span of head h's slot that holds its W_o block (value-copy layout).
int64_t wo_span(const EmbeddingLayout& L, int64_t h) {
  const int64_t r_s = L.small.n_head / L.small.n_head_kv, m = kQuantBlock / L.small.head_dim;
  return (h % r_s) % m;
}

// Offset inside the KV head's slot of the value copy read by small query head h.
int64_t value_offset(const EmbeddingLayout& L, int64_t h) {
  if (!L.v_copies) return 0;
  const int64_t m = kQuantBlock / L.small.head_dim;
  return wo_span(L, h) * kQuantBlock + (h % m) * L.small.head_dim;
}

void check_fit(const ModelConfig& s, const SynthPreset& p, int64_t head_dim) {
  if (s.arch != p.arch)
    STRATA_THROW("preset '", p.name, "' is ", p.arch, " but the small model is ", s.arch,
                 ": --from needs the same architecture");
  require_fits("embedding length", s.n_embd, p.n_embd, p.name);
  require_fits("layer count", s.n_layer, p.n_layer, p.name);
  require_fits("head dimension", s.head_dim, head_dim, p.name);
  require_fits("feed-forward length", s.n_ff, p.n_ff, p.name);
  require_fits("KV head count", s.n_head_kv, p.n_head_kv, p.name);
  const int64_t r_s = s.n_head / s.n_head_kv, r = p.n_head / p.n_head_kv;
  if (r_s > r)
    STRATA_THROW("the small model's ", r_s, " query heads per KV head do not fit preset '", p.name, "' (", r,
                 " per KV head)");
  if (s.rope.n_rot != s.head_dim)
    STRATA_THROW("the small model rotates ", s.rope.n_rot, " of ", s.head_dim,
                 " head dimensions: partial rotary cannot be embedded (llama.cpp rotates whole heads)");
}

}  // namespace

EmbeddingLayout plan_embedding(const ModelConfig& s, const SynthPreset& p) {
  if (p.n_head <= 0 || p.n_head_kv <= 0 || p.n_embd % p.n_head != 0 || p.n_head % p.n_head_kv != 0)
    STRATA_THROW("preset '", p.name, "' has inconsistent head counts");
  EmbeddingLayout L;
  L.small = s;
  L.arch = p.arch;
  L.n_embd = p.n_embd;
  L.n_layer = p.n_layer;
  L.n_head = p.n_head;
  L.n_head_kv = p.n_head_kv;
  L.head_dim = p.n_embd / p.n_head;
  L.n_ff = p.n_ff;
  L.n_vocab = s.n_vocab;
  check_fit(s, p, L.head_dim);

  L.q_scale = std::sqrt(static_cast<double>(L.head_dim) / static_cast<double>(s.head_dim));
  L.norm_scale = std::sqrt(static_cast<double>(s.n_embd) / static_cast<double>(L.n_embd));
  const double eps =
      static_cast<double>(s.rms_eps) * static_cast<double>(s.n_embd) / static_cast<double>(L.n_embd);
  if (eps < 1e-12)
    STRATA_THROW("the small model's rms epsilon ", s.rms_eps, " scaled to the wider residual is ", eps,
                 ", below what model loaders accept (1e-12)");
  L.rms_eps = static_cast<float>(eps);
  const double base = std::pow(static_cast<double>(s.rope.freq_base),
                               static_cast<double>(L.head_dim) / static_cast<double>(s.head_dim));
  if (!(base <= FLT_MAX))
    STRATA_THROW("the rope base the wider heads need (", s.rope.freq_base, "^", L.head_dim, "/", s.head_dim,
                 ") exceeds the float range");
  L.rope_base = static_cast<float>(base);

  const int64_t hs = s.head_dim, hd = L.head_dim;
  const int64_t r_s = s.n_head / s.n_head_kv;
  L.v_copies = hs < kQuantBlock && kQuantBlock % hs == 0 && hd % kQuantBlock == 0 &&
               std::min(r_s, kQuantBlock / hs) <= hd / kQuantBlock;

  L.residual.assign(static_cast<size_t>(L.n_embd), kZero);
  for (int64_t i = 0; i < s.n_embd; ++i) L.residual[static_cast<size_t>(i)] = i;

  // Query heads: real heads' rope dims carry the small rows, their padding dims are zero (no
  // contribution to scores); heads that no small head uses are random.
  L.q_rows.assign(static_cast<size_t>(L.n_head * hd), kRandom);
  L.o_cols.assign(static_cast<size_t>(L.n_head * hd), kZero);
  for (int64_t h = 0; h < s.n_head; ++h) {
    const int64_t slot = large_q_head(L, h) * hd;
    std::fill(L.q_rows.begin() + slot, L.q_rows.begin() + slot + hd, kZero);
    for (int64_t e = 0; e < hs; ++e) L.q_rows[static_cast<size_t>(slot + rope_position(L, e))] = h * hs + e;
    if (L.v_copies) {
      const int64_t m = kQuantBlock / hs, block = (h / m) * kQuantBlock,
                    span = slot + wo_span(L, h) * kQuantBlock;
      for (int64_t j = 0; j < kQuantBlock && block + j < s.n_embd_q(); ++j)
        L.o_cols[static_cast<size_t>(span + j)] = block + j;
    } else {
      for (int64_t e = 0; e < hs; ++e) L.o_cols[static_cast<size_t>(slot + e)] = h * hs + e;
    }
  }
  // KV heads: small KV head g is large KV head g; unused KV heads are random.
  L.k_rows.assign(static_cast<size_t>(L.n_head_kv * hd), kRandom);
  L.v_rows.assign(static_cast<size_t>(L.n_head_kv * hd), kRandom);
  for (int64_t g = 0; g < s.n_head_kv; ++g) {
    const int64_t slot = g * hd;
    std::fill(L.k_rows.begin() + slot, L.k_rows.begin() + slot + hd, kZero);
    std::fill(L.v_rows.begin() + slot, L.v_rows.begin() + slot + hd, kZero);
    for (int64_t e = 0; e < hs; ++e) L.k_rows[static_cast<size_t>(slot + rope_position(L, e))] = g * hs + e;
    for (int64_t h = g * r_s; h < (g + 1) * r_s; ++h)
      for (int64_t e = 0; e < hs; ++e)
        L.v_rows[static_cast<size_t>(slot + value_offset(L, h) + e)] = g * hs + e;
  }

  const int64_t zero_units =
      std::min(L.n_ff, (s.n_ff + kQuantSuperBlock - 1) / kQuantSuperBlock * kQuantSuperBlock);
  L.ffn_rows.assign(static_cast<size_t>(L.n_ff), kRandom);
  L.ffn_cols.assign(static_cast<size_t>(L.n_ff), kZero);
  for (int64_t u = 0; u < zero_units; ++u) L.ffn_rows[static_cast<size_t>(u)] = u < s.n_ff ? u : kZero;
  for (int64_t u = 0; u < s.n_ff; ++u) L.ffn_cols[static_cast<size_t>(u)] = u;
  return L;
}

}  // namespace strata
