// A random layer for the calibration tests: weights and the Gram matrix of inputs whose channels
// are correlated and a few of them loud, so the Hessian is far from diagonal (the case GPTQ's
// error feedback, the scale refit and the level descent are for).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace strata::calib::testutil {

struct Layer {
  int64_t n_out, n_in;
  std::vector<float> w;     // [n_out, n_in]
  std::vector<float> gram;  // [n_in, n_in]
};

inline Layer make_layer(int64_t n_out, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  Layer L{n_out, n_in, std::vector<float>(static_cast<size_t>(n_out * n_in)),
          std::vector<float>(static_cast<size_t>(n_in * n_in), 0.0f)};
  for (auto& v : L.w) v = d(rng);
  const int64_t T = 4 * n_in;
  std::vector<float> x(static_cast<size_t>(n_in));
  std::vector<double> g(static_cast<size_t>(n_in * n_in), 0.0);
  for (int64_t t = 0; t < T; ++t) {
    const float common = d(rng);
    for (int64_t i = 0; i < n_in; ++i) x[i] = (d(rng) + 0.7f * common) * (i % 5 == 0 ? 3.0f : 1.0f);
    for (int64_t i = 0; i < n_in; ++i)
      for (int64_t j = 0; j < n_in; ++j) g[i * n_in + j] += double(x[i]) * x[j];
  }
  for (size_t k = 0; k < g.size(); ++k) L.gram[k] = static_cast<float>(g[k]);
  return L;
}

// The Gram matrix with damp * mean(diag) added to its diagonal, in float64.
inline std::vector<double> damped(const Layer& L, double damp) {
  const int64_t n = L.n_in;
  std::vector<double> H(L.gram.begin(), L.gram.end());
  double mean = 0;
  for (int64_t i = 0; i < n; ++i) mean += H[i * n + i];
  mean /= n;
  for (int64_t i = 0; i < n; ++i) H[i * n + i] += damp * mean;
  return H;
}

}  // namespace strata::calib::testutil
