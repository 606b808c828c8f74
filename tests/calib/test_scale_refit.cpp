// The least-squares refit of block scales after GPTQ (calib/scale_refit.h), checked against a
// float64 computation written here: the damped quadratic error sum_rows (w - v)^T H (w - v) with
// H = X^T X + damp * mean(diag) I, the closed-form optimum of one block per row
// (s* = v^T H w / v^T H v), and the block layouts (only the f16 scale/min fields may change).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "calib/gptq.h"
#include "calib/scale_refit.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "correlated_layer.h"
#include "quant/quantize.h"

namespace strata::calib {
namespace {

using testutil::damped;
using testutil::Layer;
using testutil::make_layer;

// (w - v)^T H (w - v) of row r.
double row_error(const Layer& L, const std::vector<double>& H, const uint8_t* q, TensorType t, int64_t r) {
  const int64_t n = L.n_in;
  std::vector<float> v(static_cast<size_t>(n));
  dequantize_row(t, q + r * row_bytes(t, n), v.data(), n);
  double s = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      s += (L.w[r * n + i] - double(v[i])) * H[i * n + j] * (L.w[r * n + j] - double(v[j]));
  return s;
}

std::vector<uint8_t> gptq(const Layer& L, TensorType t, double damp) {
  std::vector<uint8_t> q(row_bytes(t, L.n_in) * static_cast<size_t>(L.n_out));
  GptqOptions o;
  o.damp = damp;
  gptq_quantize(t, L.w.data(), L.n_out, L.n_in, L.gram.data(), o, q.data(), nullptr);
  return q;
}

TEST(ScaleRefit, LowersTheDampedOutputErrorOfEveryRowAndTouchesOnlyScales) {
  struct Case {
    TensorType type;
    int64_t n_in;
  };
  for (const Case c : {Case{TensorType::Q4_0, 96}, Case{TensorType::Q4_1, 64}, Case{TensorType::Q5_0, 64},
                       Case{TensorType::Q8_0, 64}, Case{TensorType::IQ4_NL, 64}, Case{TensorType::Q4_K, 256},
                       Case{TensorType::Q6_K, 256}, Case{TensorType::Q2_K, 256}}) {
    SCOPED_TRACE(type_name(c.type));
    const double damp = 0.01;
    const Layer L = make_layer(19, c.n_in, 7);
    std::vector<uint8_t> q = gptq(L, c.type, damp);
    const std::vector<uint8_t> before = q;
    const std::vector<double> H = damped(L, damp);
    ThreadPool pool(2);
    const ScaleRefitReport rep =
        refit_block_scales(c.type, L.w.data(), L.n_out, L.n_in, L.gram.data(), damp, q.data(), &pool);
    EXPECT_EQ(rep.rows, L.n_out);
    EXPECT_GT(rep.rows_changed, 0);
    double sum_before = 0, sum_after = 0;
    for (int64_t r = 0; r < L.n_out; ++r) {
      const double eb = row_error(L, H, before.data(), c.type, r), ea = row_error(L, H, q.data(), c.type, r);
      EXPECT_LE(ea, eb * (1 + 1e-4) + 1e-6) << "row " << r;
      sum_before += eb;
      sum_after += ea;
    }
    EXPECT_LT(sum_after, sum_before);
    EXPECT_NEAR(rep.error_before, sum_before, 1e-3 * sum_before);
    EXPECT_NEAR(rep.error_after, sum_after, 2e-3 * sum_before);
    // Only the scales moved: each block's new values are its old ones times one factor (up to
    // the f16 rounding of the scale and the min, hence a tolerance relative to the block's range).
    const int64_t n = L.n_in, B = type_traits(c.type).block_size;
    std::vector<float> v0(static_cast<size_t>(n)), v1(static_cast<size_t>(n));
    for (int64_t r = 0; r < L.n_out; ++r) {
      dequantize_row(c.type, before.data() + r * row_bytes(c.type, n), v0.data(), n);
      dequantize_row(c.type, q.data() + r * row_bytes(c.type, n), v1.data(), n);
      for (int64_t b = 0; b < n / B; ++b) {
        int64_t k = b * B;  // the block's largest value fixes the factor
        for (int64_t i = b * B; i < (b + 1) * B; ++i)
          if (std::fabs(v0[i]) > std::fabs(v0[k])) k = i;
        if (v0[k] == 0) continue;
        const double f = v1[k] / double(v0[k]);
        for (int64_t i = b * B; i < (b + 1) * B; ++i)
          ASSERT_NEAR(v1[i], f * v0[i], 3e-3 * std::fabs(v0[k])) << "row " << r << " block " << b;
      }
    }
  }
}

TEST(ScaleRefit, OneBlockPerRowFindsTheClosedFormOptimum) {
  const double damp = 0.05;
  const Layer L = make_layer(11, 32, 3);
  std::vector<uint8_t> q = gptq(L, TensorType::Q8_0, damp);
  const std::vector<uint8_t> before = q;
  refit_block_scales(TensorType::Q8_0, L.w.data(), L.n_out, L.n_in, L.gram.data(), damp, q.data(), nullptr);
  const std::vector<double> H = damped(L, damp);
  std::vector<float> v(32);
  for (int64_t r = 0; r < L.n_out; ++r) {
    dequantize_row(TensorType::Q8_0, before.data() + r * 34, v.data(), 32);
    double vhw = 0, vhv = 0;
    for (int i = 0; i < 32; ++i)
      for (int j = 0; j < 32; ++j) {
        vhw += double(v[i]) * H[i * 32 + j] * L.w[r * 32 + j];
        vhv += double(v[i]) * H[i * 32 + j] * v[j];
      }
    fp16_t d0, d1;
    std::memcpy(&d0, before.data() + r * 34, 2);
    std::memcpy(&d1, q.data() + r * 34, 2);
    const double expect = fp16_to_f32(d0) * (vhw / vhv);
    // Kept only when the rounded scale lowers the error: either the optimum (to f16) or unchanged.
    if (d1 != d0)
      EXPECT_NEAR(fp16_to_f32(d1), expect, 2e-3 * std::fabs(expect)) << "row " << r;
    else
      EXPECT_NEAR(fp16_to_f32(d0), expect, 2e-3 * std::fabs(expect)) << "row " << r;
    EXPECT_EQ(std::memcmp(before.data() + r * 34 + 2, q.data() + r * 34 + 2, 32), 0)
        << "levels changed, row " << r;
  }
}

TEST(ScaleRefit, DeadColumnsAndZeroRowsStayFinite) {
  Layer L = make_layer(4, 64, 9);
  for (int64_t j = 0; j < 64; ++j) L.gram[5 * 64 + j] = L.gram[j * 64 + 5] = 0;  // column 5 never excited
  for (int64_t i = 0; i < 64; ++i) L.w[2 * 64 + i] = 0;                          // an all-zero row
  std::vector<uint8_t> q = gptq(L, TensorType::Q4_0, 0.01);
  const ScaleRefitReport rep = refit_block_scales(TensorType::Q4_0, L.w.data(), L.n_out, L.n_in,
                                                  L.gram.data(), 0.01, q.data(), nullptr);
  EXPECT_TRUE(std::isfinite(rep.error_after));
  EXPECT_LE(rep.error_after, rep.error_before);
  std::vector<float> v(64);
  for (int64_t r = 0; r < L.n_out; ++r) {
    dequantize_row(TensorType::Q4_0, q.data() + r * row_bytes(TensorType::Q4_0, 64), v.data(), 64);
    for (float x : v) ASSERT_TRUE(std::isfinite(x));
    if (r == 2)
      for (float x : v) EXPECT_EQ(x, 0.0f);
  }
}

TEST(ScaleRefit, TypesWithoutLinearScalesAreNotRefittable) {
  EXPECT_TRUE(has_refittable_scales(TensorType::Q4_0));
  EXPECT_TRUE(has_refittable_scales(TensorType::Q6_K));
  EXPECT_FALSE(has_refittable_scales(TensorType::MXFP4));
  EXPECT_FALSE(has_refittable_scales(TensorType::F16));
  EXPECT_FALSE(has_refittable_scales(TensorType::IQ2_XS));
}

}  // namespace
}  // namespace strata::calib
