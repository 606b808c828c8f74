// F32 working copies of weight matrices and the input statistics the calibrated quantizers use,
// as the scale searches and folds of AWQ transform them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor_type.h"

namespace strata::calib {

struct WeightMatrix {
  std::string name;
  int64_t n_out = 0, n_in = 0;
  std::vector<float> w;               // [n_out, n_in]
  TensorType type = TensorType::F32;  // the type it is quantized to

  float* row(int64_t r) { return w.data() + r * n_in; }
  const float* row(int64_t r) const { return w.data() + r * n_in; }
};

// Statistics of a matrix input of n channels. Scaling the channels (x -> x / s, as folding a
// per-channel scale into the previous op does) transforms all of them exactly.
struct InputStats {
  int64_t n = 0;
  std::vector<float> gram;      // [n, n] mean of x x^T, or empty (diagonal only)
  std::vector<float> msq;       // [n] mean of x^2: the importance matrix and diag(gram)
  std::vector<float> mean_abs;  // [n] mean |x|
  std::vector<float> abs_max;   // [n] max |x|, or empty

  bool has_gram() const { return !gram.empty(); }
  // The statistics of x / s: s [n] > 0.
  void divide_channels(const std::vector<float>& s);
};

}  // namespace strata::calib
