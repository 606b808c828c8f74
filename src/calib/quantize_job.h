// `strata quantize` end to end: the type plan (quant_plan.h), the statistics (an imatrix file or
// calibration passes over a text), the calibrated methods layer by layer (AWQ folds, GPTQ, AWQ's
// clip search, imatrix-weighted round-to-nearest), and the GGUF written with llama.cpp's
// metadata. The output is a standard GGUF of standard types, which llama.cpp loads unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "calib/awq.h"
#include "calib/gptq.h"
#include "calib/quant_plan.h"
#include "calib/tensor_quantizer.h"

namespace strata::calib {

struct QuantizeJobOptions {
  std::string input, output, tokenizer;
  PlanOptions plan;
  Method method = Method::Rtn;
  std::string imatrix_path;  // --imatrix
  std::string calib_text;    // contents of --calib-file
  std::string calib_name;    // its path, for the metadata
  int64_t calib_ctx = 512;
  int64_t calib_chunks = 0;
  size_t calib_mem = size_t{2} << 30;  // Gram matrices held per calibration pass
  GptqOptions gptq;
  AwqOptions awq;
  bool clip = true;
  // Calibrate each layer on the outputs of the layers before it, already quantized (the GPTQ
  // paper's order; one calibration pass per layer) instead of on the unquantized model.
  bool sequential = false;
  int64_t metric_rows = 128;
  int threads = 0;
  // The untied token embedding under --method gptq/awq/awq+gptq: GPTQ (with the refit and descent
  // above) under embedding_hessian.h's H instead of round-to-nearest. Weights of the reader groups
  // (each scaled to a mean diagonal of 1): every layer's q/k/v behind its attn_norm, the first
  // layer's gate/up behind its ffn_norm, the later layers' gate/up, the output matrix behind
  // output_norm; and of the identity. All zero (the default): round-to-nearest.
  struct EmbeddingReaders {
    // Off by default: on stories260K it moved the KLD by -1 % to +1.4 % depending on the recipe
    // (BENCHMARKS.md); 0,1,0,1,1 is what gained on synth-tiny.
    double attn = 0, ffn0 = 0, ffn_later = 0, output = 0, identity = 0;
    bool any() const { return attn != 0 || ffn0 != 0 || ffn_later != 0 || output != 0 || identity != 0; }
  } embd;
};

struct TensorReport {
  std::string name;
  std::string shape;  // "4096 x 11008"
  TensorType from = TensorType::F32, to = TensorType::F32;
  TensorType wanted = TensorType::F32;  // before the fallback
  bool fell_back = false;
  MatrixReport q;  // empty `how` for tensors copied or converted without quantization
};

struct QuantizeJobResult {
  std::vector<TensorReport> tensors;
  std::vector<std::string> notes;  // AWQ folds, warnings
  size_t in_bytes = 0, out_bytes = 0;
  int64_t calibration_passes = 0;
};

QuantizeJobResult run_quantize_job(const QuantizeJobOptions& options);

// The summary table (one line per quantized matrix) for stderr.
std::string format_summary(const QuantizeJobResult& r);

}  // namespace strata::calib
