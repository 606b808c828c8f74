// The per-channel scale folds of AWQ on one Llama-family decoder layer:
//   attn_norm -> q, k, v     (x / s into the RMSNorm weights, W diag(s))
//   v -> o                   (rows of v / s_v, columns of o * s; under grouped-query attention
//                             one s per v channel, shared by every head that reads it)
//   ffn_norm -> gate, up
//   up -> down               (rows of up / s, columns of down * s: silu(gate) * up is linear in up)
// in this order (AutoAWQ's). Each fold leaves the unquantized layer's function unchanged.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "calib/awq.h"
#include "calib/tensor_quantizer.h"

namespace strata {
class ThreadPool;
}

namespace strata::calib {

// One decoder layer's tensors by their name after "blk.N.": matrices ("attn_q.weight", ...) and
// vectors ("attn_norm.weight", "attn_v.bias", ...).
struct LayerWork {
  int64_t index = 0;
  std::map<std::string, MatrixJob> mats;
  std::map<std::string, std::vector<float>> vecs;
};

struct FoldShape {
  int64_t n_head = 0, n_head_kv = 0, head_dim = 0;
};

struct FoldLog {
  std::vector<std::string> lines;  // "attn_norm -> q,k,v: alpha 0.35, loss 0.81x" ...
};

// AWQ: searches and applies the four folds (those whose tensors are all present and have
// statistics). Returns what was done.
FoldLog apply_awq(LayerWork& layer, const FoldShape& shape, const AwqOptions& options, ThreadPool* pool);

// o_proj input channel -> v_proj output channel under grouped-query attention: [n_head * head_dim].
std::vector<int32_t> gqa_channel_map(const FoldShape& shape);

}  // namespace strata::calib
