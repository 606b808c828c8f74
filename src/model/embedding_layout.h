// Where each weight of a small Llama-family model goes when it is embedded into a larger shape
// so that the large model computes exactly the small model's function (`strata synth --from`).
//
// Every large matrix is described by a row map and a column map onto its small counterpart:
//   big[r][c] = scale * small[rows[r]][cols[c]]   when rows[r] >= 0 and cols[c] >= 0,
//             = 0                                 when rows[r] >= 0 and cols[c] == kZero,
//             = 0 for every c                     when rows[r] == kZero,
//             = random for every c                when rows[r] == kRandom.
// Random rows are the ones whose output never reaches the residual stream (padding heads,
// padding FFN units): they cost memory traffic and FLOPs like a real model's and change nothing.
//
// The derivation of every factor and placement is in embedding_layout.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "model/synthetic_model.h"

namespace strata {

// Entries of an IndexMap: a small index (>= 0), or one of these.
constexpr int64_t kZero = -1;
constexpr int64_t kRandom = -2;

using IndexMap = std::vector<int64_t>;

struct EmbeddingLayout {
  ModelConfig small;
  // The large shape (from the preset); the vocabulary stays the small model's.
  std::string arch;
  int64_t n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0;
  int64_t n_vocab = 0;  // == small.n_vocab

  // Scalar compensations (see embedding_layout.cpp for the derivations).
  double q_scale = 1.0;     // multiplies the real rows of W_q (and b_q): sqrt(head_dim / small.head_dim)
  double norm_scale = 1.0;  // multiplies the real RMSNorm weights: sqrt(small.n_embd / n_embd)
  float rms_eps = 0.0f;     // small.rms_eps * small.n_embd / n_embd
  float rope_base = 0.0f;   // small base ^ (head_dim / small.head_dim)

  // True when the value heads are duplicated so that W_o's real blocks of kQuantBlock columns
  // hold exactly the small model's blocks (see embedding_layout.cpp); else W_o's real columns of a
  // head sit at the start of its slot, next to zeros.
  bool v_copies = false;

  IndexMap residual;  // [n_embd] residual dimension -> small dimension
  IndexMap q_rows;    // [n_head * head_dim] rows of W_q (and b_q) -> small rows
  IndexMap k_rows;    // [n_head_kv * head_dim] rows of W_k (and b_k)
  IndexMap v_rows;    // [n_head_kv * head_dim] rows of W_v (and b_v)
  IndexMap o_cols;    // [n_head * head_dim] columns of W_o -> small columns
  IndexMap ffn_rows;  // [n_ff] rows of W_gate and W_up
  IndexMap ffn_cols;  // [n_ff] columns of W_down

  // Layers [0, small.n_layer) carry the small model's layers; the rest are padding layers
  // (random q/k/v/gate/up, zero attn_output and ffn_down: the residual passes through).
  bool is_real_layer(int64_t il) const { return il < small.n_layer; }
};

// Block size of the legacy quantized types (Q4_0 ... Q8_0) and the sub-block size of Q4_K/Q5_K;
// Q2_K/Q3_K/Q6_K sub-blocks of 16 divide it.
constexpr int64_t kQuantBlock = 32;
// K-quant super-block: padding FFN units up to the next multiple of it get zero gate/up rows.
constexpr int64_t kQuantSuperBlock = 256;

// Plans the embedding of `small` into `preset`. Throws strata::Error with a one-line message
// when the small model does not fit (a dimension larger than the preset's, KV heads or query
// heads per KV head that do not fit, partial rotary, a rope base beyond float range) or the
// architectures differ.
EmbeddingLayout plan_embedding(const ModelConfig& small, const SynthPreset& preset);

}  // namespace strata
