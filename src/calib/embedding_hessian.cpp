#include "calib/embedding_hessian.h"

#include "calib/dense_gemm.h"
#include "core/check.h"

namespace strata::calib {

std::vector<float> embedding_hessian(const float* w_out, int64_t n_vocab, int64_t n_embd, const float* gamma,
                                     ThreadPool* pool) {
  STRATA_CHECK(n_vocab > 0 && n_embd > 0);
  // A = (W_out diag(gamma))^T: [n_embd, n_vocab], so that H = A A^T = A (A^T) with A^T its scaled
  // copy in W_out's own layout.
  std::vector<float> scaled(static_cast<size_t>(n_vocab * n_embd));  // [n_vocab, n_embd]
  std::vector<float> at(static_cast<size_t>(n_embd * n_vocab));      // [n_embd, n_vocab]
  for (int64_t v = 0; v < n_vocab; ++v)
    for (int64_t i = 0; i < n_embd; ++i) {
      const float x = w_out[v * n_embd + i] * (gamma ? gamma[i] : 1.0f);
      scaled[static_cast<size_t>(v * n_embd + i)] = x;
      at[static_cast<size_t>(i * n_vocab + v)] = x;
    }
  std::vector<float> H(static_cast<size_t>(n_embd * n_embd), 0.0f);
  gemm_parallel(pool, n_embd, n_embd, n_vocab, 1.0f / static_cast<float>(n_vocab), at.data(), n_vocab,
                scaled.data(), n_embd, H.data(), n_embd);
  // Exactly symmetric, whatever the summation order of the two triangles.
  for (int64_t i = 0; i < n_embd; ++i)
    for (int64_t j = i + 1; j < n_embd; ++j)
      H[static_cast<size_t>(j * n_embd + i)] = H[static_cast<size_t>(i * n_embd + j)];
  return H;
}

}  // namespace strata::calib
