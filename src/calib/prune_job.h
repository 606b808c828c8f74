// `strata prune` end to end: the statistics (an imatrix file or calibration passes over a text),
// each linear layer pruned by magnitude, Wanda or SparseGPT (pruning.h, sparsegpt.h), and a dense
// GGUF written with the zeros in place. Pruned matrices: the attention and feed-forward
// projections of every layer (blk.N.attn_*.weight and blk.N.ffn_*.weight with two or more
// dimensions, experts included), never the token embedding, the output matrix, norms or the MoE
// router (ffn_gate_inp). Everything else is copied unchanged.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "calib/pruning.h"
#include "calib/sparsegpt.h"
#include "core/tensor_type.h"

namespace strata::calib {

struct PruneJobOptions {
  std::string input, output, tokenizer;
  PruneMethod method = PruneMethod::Magnitude;
  SparsityPattern pattern;
  std::string imatrix_path;  // --imatrix
  std::string calib_text;    // contents of --calib-file
  std::string calib_name;    // its path, for the metadata
  int64_t calib_ctx = 512;
  int64_t calib_chunks = 0;
  size_t calib_mem = size_t{2} << 30;  // Gram matrices held per calibration pass (SparseGPT)
  SparseGptOptions sparsegpt;
  // Pruned matrices are stored as this type (rounded to nearest, imatrix-weighted when there are
  // statistics); unset: the source's type when it is F32, F16 or BF16, else F32.
  std::optional<TensorType> type;
  // SparseGPT with `type`: prune and quantize in one pass (sparsegpt_prune_quantize, then the
  // least-squares scale refit of calib/scale_refit.h) where the type holds an exact 0; false, or
  // a type without an exact 0: prune, then round the kept weights.
  bool joint_quant = true;
  // Calibrate each layer on the outputs of the layers before it, already pruned (the protocol of
  // the SparseGPT and Wanda papers; one calibration pass per layer) instead of on the dense model.
  bool sequential = false;
  int threads = 0;
};

struct PrunedTensor {
  std::string name;
  std::string shape;  // "64 x 64 x 8"
  std::string how;    // "sparsegpt", "wanda", "magnitude", "magnitude (no statistics)", ...
  TensorType type = TensorType::F32;
  int64_t zeros = 0, elements = 0;  // weights the mask zeroed, of all
};

struct PruneJobResult {
  std::vector<PrunedTensor> tensors;
  std::vector<std::string> notes;
  size_t in_bytes = 0, out_bytes = 0;
  int64_t calibration_passes = 0;
};

// True for the tensors `strata prune` prunes (see above).
bool is_prunable_tensor(const std::string& name, int n_dims);

PruneJobResult run_prune_job(const PruneJobOptions& options);

}  // namespace strata::calib
