#include "calib/embedding_hessian.h"

#include "calib/dense_gemm.h"
#include "core/check.h"

namespace strata::calib {

std::vector<float> embedding_hessian(int64_t n_embd, const std::vector<EmbeddingReaderGroup>& groups,
                                     double identity, ThreadPool* pool) {
  const auto n = static_cast<size_t>(n_embd);
  std::vector<double> h(n * n, 0.0);
  for (size_t i = 0; i < n; ++i) h[i * n + i] = identity;
  for (const EmbeddingReaderGroup& g : groups) {
    STRATA_CHECK(g.mats.size() == g.rows.size(), "embedding readers: one row count per matrix");
    STRATA_CHECK(g.gamma.empty() || g.gamma.size() == n, "embedding readers: gamma has n_embd entries");
    if (g.weight == 0 || g.mats.empty()) continue;
    std::vector<float> hg(n * n, 0.0f);
    for (size_t m = 0; m < g.mats.size(); ++m) {
      const int64_t rows = g.rows[m];
      // Wg = W diag(gamma): [rows, n]; WgT: [n, rows]. H_g += WgT * Wg.
      std::vector<float> wg(static_cast<size_t>(rows) * n), wgt(static_cast<size_t>(rows) * n);
      for (int64_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < n; ++c) {
          const float v = g.mats[m][static_cast<size_t>(r) * n + c] * (g.gamma.empty() ? 1.0f : g.gamma[c]);
          wg[static_cast<size_t>(r) * n + c] = v;
          wgt[c * static_cast<size_t>(rows) + static_cast<size_t>(r)] = v;
        }
      gemm_parallel(pool, n_embd, n_embd, rows, 1.0f, wgt.data(), rows, wg.data(), n_embd, hg.data(), n_embd);
    }
    double trace = 0;
    for (size_t i = 0; i < n; ++i) trace += hg[i * n + i];
    if (trace <= 0) continue;
    const double s = g.weight * static_cast<double>(n) / trace;
    for (size_t i = 0; i < n * n; ++i) h[i] += s * hg[i];
  }
  std::vector<float> out(n * n);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) out[i * n + j] = static_cast<float>(0.5 * (h[i * n + j] + h[j * n + i]));
  return out;
}

}  // namespace strata::calib
