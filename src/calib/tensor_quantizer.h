// Quantizes one weight matrix (or each expert slice of a 3-D one) by a calibration method, and
// measures the output error before (plain round-to-nearest) and after.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "calib/awq.h"
#include "calib/gptq.h"
#include "calib/weight_matrix.h"

namespace strata {
class ThreadPool;
}

namespace strata::calib {

enum class Method { Rtn, Gptq, Awq, AwqGptq };
const char* method_name(Method m);
// "rtn", "gptq", "awq", "awq+gptq"; throws strata::Error otherwise.
Method parse_method(const std::string& name);
inline bool uses_gptq(Method m) {
  return m == Method::Gptq || m == Method::AwqGptq;
}
inline bool uses_awq(Method m) {
  return m == Method::Awq || m == Method::AwqGptq;
}

struct MatrixQuantOptions {
  Method method = Method::Rtn;
  bool clip = true;  // AWQ's clip search (method awq; AutoAWQ skips q and k: the caller says)
  GptqOptions gptq;
  int64_t metric_rows = 256;  // rows the before/after error is measured on
};

// What was done to one matrix and how far its output moved.
struct MatrixReport {
  std::string how;         // "gptq", "awq clip", "rtn+imatrix", "rtn", "f16", ...
  double err_before = -1;  // relative output error of plain round-to-nearest (< 0: not measured)
  double err_after = -1;   // of the result
};

// A matrix being quantized: its working weights (after any folds), the folds applied (to map
// the result back onto the original weights for the error), and its input statistics.
struct MatrixJob {
  WeightMatrix m;                     // working weights, m.type the target type
  std::vector<float> original;        // [n_out, n_in] the weights before any fold (for the error)
  std::vector<float> col_scale;       // columns multiplied by it (empty: none)
  std::vector<float> row_div;         // rows divided by it (empty: none)
  std::optional<InputStats> in;       // statistics of the working input (after folds)
  std::optional<InputStats> in_orig;  // statistics of the original input
  bool allow_clip = true;
};

// Quantizes `job.m` to job.m.type into `out` (n_out rows). Falls back to round-to-nearest (with
// the importance when known) where the method cannot apply (no Gram matrix, float types).
MatrixReport quantize_matrix(const MatrixJob& job, const MatrixQuantOptions& options, void* out,
                             ThreadPool* pool);

}  // namespace strata::calib
