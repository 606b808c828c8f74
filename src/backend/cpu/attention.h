// The CPU attention kernel: one chunk of query rows over a sequence's paged K/V tiles, with an
// online softmax (flash-attention style), dispatched by ISA level.
//
// The driver (attention.cpp) walks the sequence's blocks, converts each (block, kv head) tile to
// f32 once per chunk and hands it to the per-ISA tile steps (attention_tile.h): scores, softmax
// update and the weighted sum of V. Each query row's arithmetic depends only on its own position
// and never on the other rows of the chunk, so results are batch invariant.
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "core/cpu_features.h"

namespace strata::cpu {

// One unit of attention work: `n_q` consecutive tokens of one sequence, one kv head and the
// `group` query heads that share it.
struct AttentionChunk {
  const float* q;              // first token's first head of the group; token stride q_stride floats
  int64_t q_stride;            // floats between consecutive tokens of q (n_head * head_dim)
  float* out;                  // first token's first head of the group; token stride out_stride floats
  int64_t out_stride;          // floats between consecutive tokens of out (n_head * head_dim_v)
  const int32_t* pos;          // [n_q] positions of the tokens
  int32_t n_q;                 // tokens in the chunk (<= kMaxChunkTokens)
  int32_t group;               // query heads per kv head
  int32_t kv_head;             // which kv head
  const int32_t* block_table;  // the sequence's blocks in position order
  float scale;
  int32_t sliding_window;  // 0 = none
  float softcap;           // 0 = none; else score = softcap * tanh(score * scale / softcap)
  const float* sinks;      // [group] sink logits of the group's query heads, or null
  // StreamingLLM attention sinks (kv/kv_window_policy.h): keys at positions [0, n_sink_tokens)
  // stay visible besides the sliding window, scored with q_sink instead of q (the queries rotated
  // at the sinks' position within the cache). 0: none (q_sink unused).
  int32_t n_sink_tokens = 0;
  const float* q_sink = nullptr;  // as q (same strides), or null
};

constexpr int kMaxChunkTokens = 8;
// 576: DeepSeek V2/V3 MLA runs absorbed attention as MQA over kv_lora_rank (512) + rope (64).
constexpr int kMaxHeadDim = 576;
constexpr int kMaxGroup = 128;  // MLA: all 128 query heads of DeepSeek V3 share the one latent head
constexpr int kMaxBlockSize = 32;

// Attention of the chunk's rows over the kv head's cached keys and values, written to c.out.
void attention_chunk(const AttentionChunk& c, const KvLayerView& kv, IsaLevel isa);

// The same for n <= kMaxInterleavedChunks chunks of the same tokens of one sequence (they differ
// in kv head), walked block by block together: a block's tiles of consecutive kv heads are
// neighbours in the pool, so the walk reads them in address order instead of one head's tiles
// a page or more apart. Each chunk's arithmetic is attention_chunk's: the same results.
constexpr int kMaxInterleavedChunks = 8;
void attention_chunks(const AttentionChunk* cs, int n, const KvLayerView& kv, IsaLevel isa);

}  // namespace strata::cpu
