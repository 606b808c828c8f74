// Per-expert calibration statistics (llama-imatrix's MUL_MAT_ID collection): every matrix of an
// expert stack counts only the rows routed to it. The recording backend's matmul_stack against
// tokens routed in the test (float64 softmax and top-k of random router logits), with the
// per-expert sums of x^2 and counts accumulated in float64 from the definition, for the
// shared-row layout of gate/up and the per-slot rows of down; and split_experts() on a legacy
// entry. The end-to-end checks on a MoE model are in tests/cli/test_calibrate_moe.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "backend/backend.h"
#include "calib/imatrix_file.h"
#include "calib/recording_backend.h"
#include "formats/model_file.h"

namespace strata::calib {
namespace {

// Top-k of softmax(logits) per token (ties: lower expert), in float64.
std::vector<int32_t> route(const std::vector<float>& logits, int64_t n_tokens, int64_t n_exp, int64_t k) {
  std::vector<int32_t> ids;
  for (int64_t t = 0; t < n_tokens; ++t) {
    std::vector<double> p(static_cast<size_t>(n_exp));
    double mx = -1e300, sum = 0;
    for (int64_t e = 0; e < n_exp; ++e) mx = std::max(mx, double(logits[static_cast<size_t>(t * n_exp + e)]));
    for (int64_t e = 0; e < n_exp; ++e)
      sum += p[static_cast<size_t>(e)] = std::exp(logits[static_cast<size_t>(t * n_exp + e)] - mx);
    std::vector<int32_t> order(static_cast<size_t>(n_exp));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return p[a] / sum > p[b] / sum; });
    ids.insert(ids.end(), order.begin(), order.begin() + k);
  }
  return ids;
}

TEST(MoeStats, RecordsEachExpertsRoutedRows) {
  const int64_t n_in = 24, n_out = 8, n_exp = 6, k = 2, n_tokens = 37;
  std::mt19937 rng(5);
  std::normal_distribution<float> d;
  std::vector<float> w(static_cast<size_t>(n_in * n_out * n_exp)),
      logits(static_cast<size_t>(n_tokens * n_exp));
  for (auto& v : w) v = d(rng);
  for (auto& v : logits) v = 2 * d(rng);
  TensorInfo t;
  t.name = "blk.0.ffn_gate_exps.weight";
  t.type = TensorType::F32;
  t.n_dims = 3;
  t.ne = {n_in, n_out, n_exp, 1};
  t.data = w.data();
  t.nbytes = w.size() * sizeof(float);
  const std::vector<int32_t> ids = route(logits, n_tokens, n_exp, k);

  auto cpu = make_cpu_backend(1);
  RecordingBackend rec(*cpu, 1);
  const auto stack = rec.prepare_matrix_stack(t);
  // Shared rows (gate/up: every slot reads the token's row) and per-slot rows (down), recorded
  // under two names.
  std::vector<float> x_tok(static_cast<size_t>(n_tokens * n_in)),
      x_slot(static_cast<size_t>(n_tokens * k * n_in));
  for (auto& v : x_tok) v = d(rng);
  for (auto& v : x_slot) v = d(rng);
  std::vector<float> y(static_cast<size_t>(n_tokens * k * n_out));
  rec.matmul_stack(*stack, ids.data(), n_tokens, k, x_tok.data(), SlotLayout{n_in, 0}, y.data(),
                   SlotLayout{k * n_out, n_out});
  // The product is passed through unchanged.
  for (int64_t tk = 0; tk < n_tokens; ++tk)
    for (int64_t s = 0; s < k; ++s)
      for (int64_t o = 0; o < n_out; ++o) {
        double ref = 0;
        const int32_t e = ids[static_cast<size_t>(tk * k + s)];
        for (int64_t i = 0; i < n_in; ++i)
          ref += double(w[static_cast<size_t>((e * n_out + o) * n_in + i)]) *
                 x_tok[static_cast<size_t>(tk * n_in + i)];
        EXPECT_NEAR(y[static_cast<size_t>((tk * k + s) * n_out + o)], ref, 1e-4);
      }
  TensorInfo t2 = t;
  t2.name = "blk.0.ffn_down_exps.weight";
  const auto stack2 = rec.prepare_matrix_stack(t2);
  rec.matmul_stack(*stack2, ids.data(), n_tokens, k, x_slot.data(), SlotLayout{k * n_in, n_in}, y.data(),
                   SlotLayout{k * n_out, n_out});

  for (const bool shared : {true, false}) {
    const TensorStats& st = rec.stats().at(shared ? t.name : t2.name);
    ASSERT_EQ(st.n_mat, n_exp);
    ASSERT_EQ(st.n_in, n_in);
    std::vector<double> sum2(static_cast<size_t>(n_exp * n_in), 0.0), count(static_cast<size_t>(n_exp), 0.0);
    for (int64_t tk = 0; tk < n_tokens; ++tk)
      for (int64_t s = 0; s < k; ++s) {
        const int32_t e = ids[static_cast<size_t>(tk * k + s)];
        count[static_cast<size_t>(e)] += 1;
        for (int64_t i = 0; i < n_in; ++i) {
          const double v = shared ? x_tok[static_cast<size_t>(tk * n_in + i)]
                                  : x_slot[static_cast<size_t>((tk * k + s) * n_in + i)];
          sum2[static_cast<size_t>(e * n_in + i)] += v * v;
        }
      }
    for (int64_t e = 0; e < n_exp; ++e) {
      EXPECT_EQ(st.count[static_cast<size_t>(e)], count[static_cast<size_t>(e)]) << e;
      const std::vector<float> imp = st.importance(static_cast<int>(e));
      for (int64_t i = 0; i < n_in; ++i) {
        const double want = count[static_cast<size_t>(e)] > 0
                                ? sum2[static_cast<size_t>(e * n_in + i)] / count[static_cast<size_t>(e)]
                                : 1.0;
        EXPECT_NEAR(imp[static_cast<size_t>(i)], want, 1e-5 * want) << e << " " << i;
      }
    }
  }
}

TEST(MoeStats, SplitExpertsCutsLegacyEntries) {
  TensorStats st(6, 1);  // a legacy entry of 2 experts x 3 inputs
  st.sum = {};
  st.sum_abs = {};
  st.abs_max = {};
  st.sum_sq = {1, 2, 3, 40, 50, 60};
  st.count = {4};
  split_experts(st, 3, 2);
  ASSERT_EQ(st.n_mat, 2);
  ASSERT_EQ(st.n_in, 3);
  EXPECT_EQ(st.importance(0), (std::vector<float>{0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(st.importance(1), (std::vector<float>{10, 12.5f, 15}));
  TensorStats other(5, 1);
  split_experts(other, 3, 2);  // 5 values are not 2 experts of 3: left alone
  EXPECT_EQ(other.n_mat, 1);
  EXPECT_EQ(other.n_in, 5);
}

}  // namespace
}  // namespace strata::calib
