// AWQ (Lin et al. 2023, "AWQ: Activation-aware Weight Quantization for LLM Compression and
// Acceleration"): per-input-channel scales s, chosen from the activations' mean magnitude, make
// the channels that see large activations quantize more finely. W diag(s) is quantized and the
// 1/s folds into the op before (an RMSNorm's weights, or the rows of v_proj / up_proj), so the
// unquantized model computes exactly the same function.
//
// Scale search: s = a^alpha (a = mean |x| per channel), normalised by sqrt(max s * min s), for
// alpha on a grid of n_grid points in [0, 1); the alpha whose quantized W diag(s) / s gives the
// least output error sum_r D_r^T H D_r (H = E[x x^T], over the matrices sharing the input) wins.
// alpha = 0 is s = 1, plain quantization: the search never does worse than that on this loss.
// Channels the calibration never excited keep s = 1 (scaling them would amplify unseen inputs).
//
// Clip search: per row and GGUF block, the block is clamped to ratio * max|w| before the type's
// quantizer runs, for ratio in 1, 0.95, ..., 0.55 (AutoAWQ's grid), keeping the ratio with the
// least block output error D_b^T H_bb D_b. AutoAWQ skips it for q and k; so do the callers.
#pragma once

#include <cstdint>
#include <vector>

#include "calib/weight_matrix.h"

namespace strata {
class ThreadPool;
}

namespace strata::calib {

struct AwqOptions {
  int n_grid = 20;
  int64_t max_rows = 256;  // rows per matrix the scale search measures its loss on
};

struct AwqScales {
  std::vector<float> s;  // [n_groups]
  double alpha = 0;
  double loss = 0;        // at the chosen alpha
  double loss_plain = 0;  // at alpha = 0
};

// mats: the matrices reading the input (each [n_out, in.n], quantized to its own type).
// group: [in.n] channel -> scale index, or empty (one scale per channel, n_groups = in.n): the
// v -> o fold under grouped-query attention shares one scale among the heads reading a v channel.
AwqScales awq_search_scales(const std::vector<const WeightMatrix*>& mats, const InputStats& in,
                            const std::vector<int32_t>& group, int64_t n_groups, const AwqOptions& options,
                            ThreadPool* pool);

// Expands per-group scales to channels.
std::vector<float> expand_scales(const std::vector<float>& s, const std::vector<int32_t>& group, int64_t n);

// m: [n_out, in.n] -> out: n_out rows of m.type with the clip search.
void awq_clip_quantize(const WeightMatrix& m, const InputStats& in, void* out, ThreadPool* pool);

// The dequantized rows of a quantized matrix: [n_out, n_in].
std::vector<float> dequantize_matrix(TensorType type, const void* data, int64_t n_out, int64_t n_in);

}  // namespace strata::calib
