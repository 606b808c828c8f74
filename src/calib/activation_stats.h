// What calibration learns about each weight matrix's input: per input column the sums of x, x^2
// and |x| and the largest |x| (llama.cpp's importance matrix is sum(x^2) / count; AWQ needs the
// mean |x|, activation-range quantization the max |x|), and optionally the Gram matrix X^T X
// (GPTQ's and SparseGPT's Hessian, AWQ's layer loss).
//
// A matrix may hold several experts (MoE): every statistic then has one slice per expert.
// Matrices that read the same input (q/k/v, gate/up) share one Gram matrix.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace strata {
class ThreadPool;
}

namespace strata::calib {

// Sum over the rows seen of x x^T: [n, n] float, symmetric. While accumulating only the lower
// block triangle is up to date; finalize() mirrors it.
struct GramMatrix {
  int64_t n = 0;
  int64_t count = 0;     // rows accumulated
  std::vector<float> g;  // [n, n]
  bool finalized = false;

  explicit GramMatrix(int64_t n_in) : n(n_in), g(static_cast<size_t>(n_in * n_in), 0.0f) {}
  // x: [n_rows, n] rows to add.
  void accumulate(const float* x, int64_t n_rows, ThreadPool* pool);
  // Makes g symmetric (idempotent).
  void finalize();
  size_t bytes() const { return g.size() * sizeof(float); }
};

// Statistics read from a file may lack sum, sum_abs and abs_max (empty vectors): llama.cpp's
// files only hold sum_sq and the counts.
struct TensorStats {
  int64_t n_in = 0;
  int n_mat = 1;                // experts (1 for a dense matrix)
  std::vector<double> sum;      // [n_mat, n_in] sum of x, or empty
  std::vector<double> sum_sq;   // [n_mat, n_in] sum of x^2
  std::vector<double> sum_abs;  // [n_mat, n_in] sum of |x|, or empty
  std::vector<float> abs_max;   // [n_mat, n_in] max |x|, or empty
  std::vector<double> count;    // [n_mat] rows seen (llama.cpp's legacy files: calls)
  // [n_mat] Gram matrices (null where not collected); shared by the matrices of one input.
  std::vector<std::shared_ptr<GramMatrix>> gram;
  std::string gram_leader;  // the matrix whose input this one reads ("" = its own)

  TensorStats() = default;
  TensorStats(int64_t n_in_, int n_mat_);
  // Adds rows x: [n_rows, n_in] to slice `mat` (statistics only, not the Gram).
  void accumulate(int mat, const float* x, int64_t n_rows);
  // sum_sq / count of slice `mat`: llama.cpp's importance ([n_in]; 1s where nothing was seen).
  std::vector<float> importance(int mat = 0) const;
  // sum_abs / count ([n_in]; 0s where nothing was seen); sqrt(importance) when the file had
  // no sum_abs.
  std::vector<float> mean_abs(int mat = 0) const;
  // max |x| of slice `mat` over all columns; throws strata::Error when abs_max is missing.
  float max_abs(int mat = 0) const;
  // The Gram matrix of slice `mat`, or null.
  const GramMatrix* gram_of(int mat = 0) const;
};

using StatsMap = std::map<std::string, TensorStats>;

}  // namespace strata::calib
