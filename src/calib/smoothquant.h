// SmoothQuant (Xiao et al. 2022, "SmoothQuant: Accurate and Efficient Post-Training Quantization
// for Large Language Models") for W8A8, and the per-tensor activation ranges of static W8A8.
//
// Per input channel j of the matrices that read one RMSNorm's output,
//   s_j = max|X_j|^alpha / max|W_j|^(1 - alpha)
// (max|W_j| over the rows of all those matrices), then X_j / s_j is folded into the norm weight
// and W[:, j] * s_j into the matrices: the float model's function is unchanged while the
// activation outliers move into the weights, which per-channel weight scales absorb. Folds:
//   attn_norm -> attn_q, attn_k, attn_v (or attn_qkv)      ffn_norm -> ffn_gate, ffn_up
// attn_output and ffn_down have no preceding norm and are not smoothed (folding into v / up as
// AWQ does would change the very activations of v and up that W8A8 also quantizes).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "calib/activation_stats.h"
#include "formats/model_file.h"

namespace strata::calib {

struct W8A8Calibration {
  std::unique_ptr<ModelFile> file;          // the source, smoothed when asked
  std::map<std::string, float> act_absmax;  // matrix -> max |x| of its (smoothed) input
  std::vector<std::string> log;             // one line per fold
};

// stats: calibration statistics of the source model with per-column max |x| (in_abs_max, which
// `strata calibrate` writes; llama.cpp's imatrix files lack it). alpha: SmoothQuant's migration
// strength in [0, 1], or nullopt for no smoothing. Throws strata::Error for an architecture
// other than llama with smoothing, statistics without max |x|, or mismatched shapes.
W8A8Calibration calibrate_w8a8(std::unique_ptr<ModelFile> source, const StatsMap& stats,
                               std::optional<float> alpha);

// s_j of one fold: x_absmax [n] the inputs' max |x| per channel, w_absmax [n] the weights' max
// |W[:, j]|; 1 where either is 0 (nothing to migrate), clamped to [1e-5, 1e5].
std::vector<float> smoothing_scales(const std::vector<float>& x_absmax, const std::vector<float>& w_absmax,
                                    float alpha);

}  // namespace strata::calib
