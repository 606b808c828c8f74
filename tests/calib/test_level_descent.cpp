// Coordinate descent on the levels after GPTQ (calib/level_descent.h), checked against a float64
// implementation of the method written here from its definition (CDQuant, Nair & Suggala 2024):
// minimise (v - w)^T H (v - w) over the levels of a row, H = X^T X + damp * mean(diag) I, with
// each block's scale fixed; one coordinate at a time, in column order, moving an element to the
// level whose value is nearest to v_i - g_i / H_ii (g = H (v - w)) when that lowers the error.
// Q4_0 blocks are decoded here from ggml's layout (f16 d, nibbles low then high, value
// d * (q - 8)), not through quant/block_grid.h.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "calib/gptq.h"
#include "calib/level_descent.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "correlated_layer.h"
#include "quant/block_grid.h"
#include "quant/quantize.h"

namespace strata::calib {
namespace {

using testutil::damped;
using testutil::Layer;
using testutil::make_layer;

double quad_error(const std::vector<double>& H, const float* w, const std::vector<double>& v) {
  const auto n = static_cast<int64_t>(v.size());
  double s = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) s += (v[i] - w[i]) * H[i * n + j] * (v[j] - w[j]);
  return s;
}

std::vector<double> dequantized(TensorType t, const uint8_t* q, int64_t r, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  dequantize_row(t, q + r * row_bytes(t, n), v.data(), n);
  return std::vector<double>(v.begin(), v.end());
}

std::vector<uint8_t> gptq(const Layer& L, TensorType t, double damp) {
  std::vector<uint8_t> q(row_bytes(t, L.n_in) * static_cast<size_t>(L.n_out));
  GptqOptions o;
  o.damp = damp;
  o.refit_scales = false;
  gptq_quantize(t, L.w.data(), L.n_out, L.n_in, L.gram.data(), o, q.data(), nullptr);
  return q;
}

// The reference: cyclic coordinate descent on one Q4_0 row, in float64. Returns the levels.
std::vector<int> reference_q4_0_row(const std::vector<double>& H, const float* w, const uint8_t* row,
                                    int64_t n, int max_sweeps) {
  std::vector<int> lv(static_cast<size_t>(n));
  std::vector<double> d(static_cast<size_t>(n / 32)), v(static_cast<size_t>(n)),
      g(static_cast<size_t>(n), 0.0);
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* blk = row + b * 18;
    fp16_t h;
    std::memcpy(&h, blk, 2);
    d[b] = fp16_to_f32(h);
    for (int j = 0; j < 16; ++j) {
      lv[b * 32 + j] = blk[2 + j] & 15;
      lv[b * 32 + j + 16] = blk[2 + j] >> 4;
    }
  }
  for (int64_t i = 0; i < n; ++i) v[i] = d[i / 32] * (lv[i] - 8);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < n; ++k) g[i] += H[i * n + k] * (v[k] - w[k]);
  double loss = quad_error(H, w, v);
  for (int s = 0; s < max_sweeps; ++s) {
    int moves = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double target = v[i] - g[i] / H[i * n + i], di = d[i / 32];
      int best = 0;
      for (int l = 1; l < 16; ++l)
        if (std::fabs(di * (l - 8) - target) < std::fabs(di * (best - 8) - target)) best = l;
      const double delta = di * (best - 8) - v[i];
      const double change = 2 * delta * g[i] + delta * delta * H[i * n + i];
      if (best == lv[i] || !(change < -1e-12 * loss)) continue;
      lv[i] = best;
      v[i] += delta;
      for (int64_t k = 0; k < n; ++k) g[k] += delta * H[k * n + i];
      loss += change;
      ++moves;
    }
    if (moves == 0) break;
  }
  return lv;
}

TEST(LevelDescent, Q4_0MatchesTheFloat64Reference) {
  const double damp = 0.01;
  const Layer L = make_layer(23, 96, 5);
  std::vector<uint8_t> q = gptq(L, TensorType::Q4_0, damp);
  const std::vector<uint8_t> before = q;
  const std::vector<double> H = damped(L, damp);
  ThreadPool pool(2);
  const LevelDescentReport rep =
      descend_levels(TensorType::Q4_0, L.w.data(), L.n_out, L.n_in, L.gram.data(), damp, 8, q.data(), &pool);
  EXPECT_EQ(rep.rows, L.n_out);
  EXPECT_GT(rep.moves, 0);
  const size_t rb = row_bytes(TensorType::Q4_0, L.n_in);
  double sum_before = 0, sum_after = 0;
  for (int64_t r = 0; r < L.n_out; ++r) {
    const std::vector<int> expect =
        reference_q4_0_row(H, L.w.data() + r * L.n_in, before.data() + r * rb, L.n_in, 8);
    for (int64_t b = 0; b < L.n_in / 32; ++b) {
      const uint8_t* blk = q.data() + r * rb + b * 18;
      ASSERT_EQ(std::memcmp(blk, before.data() + r * rb + b * 18, 2), 0) << "scale moved, row " << r;
      for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(blk[2 + j] & 15, expect[b * 32 + j]) << "row " << r << " element " << b * 32 + j;
        EXPECT_EQ(blk[2 + j] >> 4, expect[b * 32 + j + 16]) << "row " << r << " element " << b * 32 + j + 16;
      }
    }
    sum_before +=
        quad_error(H, L.w.data() + r * L.n_in, dequantized(TensorType::Q4_0, before.data(), r, L.n_in));
    sum_after += quad_error(H, L.w.data() + r * L.n_in, dequantized(TensorType::Q4_0, q.data(), r, L.n_in));
  }
  EXPECT_LT(sum_after, 0.99 * sum_before);  // GPTQ's greedy levels are not a coordinate-wise optimum
  EXPECT_NEAR(rep.error_before, sum_before, 1e-4 * sum_before);
  EXPECT_NEAR(rep.error_after, sum_after, 1e-4 * sum_before);
}

// Every type with a block grid: the error of no row rises, the block parameters stay, and the
// result is a coordinate-wise minimum (no single element has a better level, in float64).
TEST(LevelDescent, EndsAtACoordinateMinimumWithTheBlockParametersKept) {
  struct Case {
    TensorType type;
    int64_t n_in;
  };
  for (const Case c :
       {Case{TensorType::Q4_0, 64}, Case{TensorType::Q5_0, 96}, Case{TensorType::Q4_1, 64},
        Case{TensorType::IQ4_NL, 64}, Case{TensorType::Q4_K, 256}, Case{TensorType::Q6_K, 256}}) {
    SCOPED_TRACE(type_name(c.type));
    const double damp = 0.01;
    const Layer L = make_layer(7, c.n_in, 11);
    std::vector<uint8_t> q = gptq(L, c.type, damp);
    const std::vector<uint8_t> before = q;
    const std::vector<double> H = damped(L, damp);
    descend_levels(c.type, L.w.data(), L.n_out, L.n_in, L.gram.data(), damp, 100, q.data(), nullptr);
    const int64_t n = L.n_in, B = type_traits(c.type).block_size;
    const size_t rb = row_bytes(c.type, n), bb = type_traits(c.type).block_bytes;
    std::vector<ElementGrid> g0(static_cast<size_t>(B)), g1(static_cast<size_t>(B));
    std::vector<int> lv(static_cast<size_t>(B));
    for (int64_t r = 0; r < L.n_out; ++r) {
      const float* w = L.w.data() + r * n;
      const std::vector<double> v0 = dequantized(c.type, before.data(), r, n),
                                v1 = dequantized(c.type, q.data(), r, n);
      const double e0 = quad_error(H, w, v0), e1 = quad_error(H, w, v1);
      EXPECT_LE(e1, e0 * (1 + 1e-6)) << "row " << r;
      std::vector<double> gr(static_cast<size_t>(n), 0.0);  // H (v - w)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < n; ++k) gr[i] += H[i * n + k] * (v1[k] - w[k]);
      for (int64_t b = 0; b < n / B; ++b) {
        block_grids(c.type, before.data() + r * rb + b * bb, g0.data());
        block_grids(c.type, q.data() + r * rb + b * bb, g1.data());
        for (int64_t e = 0; e < B; ++e) {
          ASSERT_EQ(g0[e].scale, g1[e].scale) << "row " << r << " element " << b * B + e;
          ASSERT_EQ(g0[e].offset, g1[e].offset) << "row " << r << " element " << b * B + e;
        }
        for (int64_t e = 0; e < B; ++e) {
          const int64_t i = b * B + e;
          for (int l = 0; l < g1[e].n_levels; ++l) {
            const double delta = double(grid_value(g1[e], l)) - v1[i];
            const double change = 2 * delta * gr[i] + delta * delta * H[i * n + i];
            EXPECT_GE(change, -1e-6 * e1) << "row " << r << " element " << i << " level " << l;
          }
        }
      }
    }
  }
}

TEST(LevelDescent, DeadColumnsAndZeroRowsStayFinite) {
  Layer L = make_layer(4, 64, 9);
  for (int64_t j = 0; j < 64; ++j) L.gram[5 * 64 + j] = L.gram[j * 64 + 5] = 0;  // column 5 never excited
  for (int64_t i = 0; i < 64; ++i) L.w[2 * 64 + i] = 0;                          // an all-zero row
  std::vector<uint8_t> q = gptq(L, TensorType::Q4_0, 0.01);
  const LevelDescentReport rep = descend_levels(TensorType::Q4_0, L.w.data(), L.n_out, L.n_in, L.gram.data(),
                                                0.01, 8, q.data(), nullptr);
  EXPECT_TRUE(std::isfinite(rep.error_after));
  EXPECT_LE(rep.error_after, rep.error_before);
  for (int64_t r = 0; r < L.n_out; ++r) {
    const std::vector<double> v = dequantized(TensorType::Q4_0, q.data(), r, 64);
    for (double x : v) ASSERT_TRUE(std::isfinite(x));
    if (r == 2) {
      for (double x : v) EXPECT_EQ(x, 0.0);
    }
  }
}

}  // namespace
}  // namespace strata::calib
