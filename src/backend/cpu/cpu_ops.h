// Element-wise and attention kernels of the CPU backend, one table per ISA level.
//
// The same portable source (cpu_ops_impl.h) is compiled three times — baseline x86-64,
// AVX2 and AVX-512 — and the compiler vectorizes it for each; the scalar build is the
// reference the others are tested against.
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
};

constexpr int kMaxChunkTokens = 8;
// 576: DeepSeek V2/V3 MLA runs absorbed attention as MQA over kv_lora_rank (512) + rope (64).
constexpr int kMaxHeadDim = 576;
constexpr int kMaxGroup = 128;  // MLA: all 128 query heads of DeepSeek V3 share the one latent head
constexpr int kMaxBlockSize = 32;

struct OpKernels {
  // y = x / rms(x) * w over one row of n.
  void (*rms_norm_row)(const float* x, const float* w, float* y, int64_t n, float eps);
  void (*swiglu)(const float* gate, const float* up, float* out, int64_t n);
  void (*add)(float* y, const float* x, int64_t n);
  // Rotates all heads of one token; cos_sin: [n_rot / 2] pairs (cos, sin) for this position.
  void (*rope_row)(float* x, const float* cos_sin, int64_t n_heads, int64_t head_dim, int n_rot, bool neox);
  // x: [n] -> y: [n] in the KV element type.
  void (*f32_to_f16)(const float* x, uint16_t* y, int64_t n);
  void (*attention_f16)(const AttentionChunk& c, const KvLayerView& kv);
  void (*attention_f32)(const AttentionChunk& c, const KvLayerView& kv);
};

const OpKernels& op_kernels(IsaLevel isa);
inline const OpKernels& op_kernels() {
  return op_kernels(isa_level());
}

// Per-ISA tables (cpu_ops.cpp, cpu_ops_avx2.cpp, cpu_ops_avx512.cpp).
const OpKernels& op_kernels_scalar();
const OpKernels& op_kernels_avx2();
const OpKernels& op_kernels_avx512();

}  // namespace strata::cpu
