// GPTQ against a direct float64 implementation of the published algorithm (Frantar et al. 2022,
// Algorithm 1 without lazy batches): H = X^T X + damp * mean(diag H) I, U = Cholesky(H^-1) upper,
// then for each column j: q = quant(w_j), e = (w_j - q) / U_jj, W[:, j:] -= e U[j, j:]. The
// quantization grid of each GGUF block is fixed when its first column is reached, from the
// block's current weights by the type's own quantizer; the reference decodes that block's scale
// from its documented layout (Q8_0: f16 d, int8 levels; Q4_0: f16 d, levels 0..15 minus 8).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "calib/gptq.h"
#include "calib/linalg.h"
#include "core/check.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "quant/quantize.h"

namespace strata::calib {
namespace {

// Correlated inputs (as activations are): x = z A with a random mixing A, plus a few loud channels.
std::vector<float> correlated_inputs(int64_t rows, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> mix(static_cast<size_t>(n * n));
  for (auto& v : mix) v = d(rng) / std::sqrt(static_cast<float>(n));
  for (int64_t i = 0; i < n; ++i) mix[static_cast<size_t>(i * n + i)] += 1.0f;
  std::vector<float> x(static_cast<size_t>(rows * n)), z(static_cast<size_t>(n));
  for (int64_t t = 0; t < rows; ++t) {
    for (auto& v : z) v = d(rng);
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t k = 0; k < n; ++k) s += z[static_cast<size_t>(k)] * mix[static_cast<size_t>(k * n + j)];
      x[static_cast<size_t>(t * n + j)] = static_cast<float>(s * (j % 7 == 0 ? 4.0 : 1.0));
    }
  }
  return x;
}

std::vector<double> gram_of(const std::vector<float>& x, int64_t rows, int64_t n) {
  std::vector<double> g(static_cast<size_t>(n * n), 0.0);
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        g[static_cast<size_t>(i * n + j)] += double(x[t * n + i]) * x[t * n + j];
  return g;
}

// A^-1 by Gauss-Jordan with partial pivoting.
std::vector<double> inverse(std::vector<double> a, int64_t n) {
  std::vector<double> inv(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) inv[static_cast<size_t>(i * n + i)] = 1;
  for (int64_t c = 0; c < n; ++c) {
    int64_t p = c;
    for (int64_t r = c + 1; r < n; ++r)
      if (std::fabs(a[static_cast<size_t>(r * n + c)]) > std::fabs(a[static_cast<size_t>(p * n + c)])) p = r;
    for (int64_t k = 0; k < n; ++k) {
      std::swap(a[static_cast<size_t>(c * n + k)], a[static_cast<size_t>(p * n + k)]);
      std::swap(inv[static_cast<size_t>(c * n + k)], inv[static_cast<size_t>(p * n + k)]);
    }
    const double d = a[static_cast<size_t>(c * n + c)];
    for (int64_t k = 0; k < n; ++k) {
      a[static_cast<size_t>(c * n + k)] /= d;
      inv[static_cast<size_t>(c * n + k)] /= d;
    }
    for (int64_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[static_cast<size_t>(r * n + c)];
      for (int64_t k = 0; k < n; ++k) {
        a[static_cast<size_t>(r * n + k)] -= f * a[static_cast<size_t>(c * n + k)];
        inv[static_cast<size_t>(r * n + k)] -= f * inv[static_cast<size_t>(c * n + k)];
      }
    }
  }
  return inv;
}

// Upper U with U^T U = A: U = L^T of A = L L^T.
std::vector<double> upper_cholesky(const std::vector<double>& a, int64_t n) {
  std::vector<double> L(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j) {
      double s = a[static_cast<size_t>(i * n + j)];
      for (int64_t k = 0; k < j; ++k)
        s -= L[static_cast<size_t>(i * n + k)] * L[static_cast<size_t>(j * n + k)];
      L[static_cast<size_t>(i * n + j)] = i == j ? std::sqrt(s) : s / L[static_cast<size_t>(j * n + j)];
    }
  std::vector<double> U(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) U[static_cast<size_t>(i * n + j)] = L[static_cast<size_t>(j * n + i)];
  return U;
}

// The values a block's elements may take, decoded from the block's documented layout.
std::vector<double> block_values(TensorType type, const uint8_t* block) {
  fp16_t h;
  std::memcpy(&h, block, 2);
  const double d = fp16_to_f32(h);
  std::vector<double> v;
  if (type == TensorType::Q8_0)
    for (int l = -128; l < 128; ++l) v.push_back(d * l);
  else
    for (int l = 0; l < 16; ++l) v.push_back(d * (l - 8));
  return v;
}

double nearest(const std::vector<double>& vals, double x) {
  double best = vals[0];
  for (double v : vals)
    if (std::fabs(x - v) < std::fabs(x - best)) best = v;
  return best;
}

// The published algorithm in float64; returns the dequantized result [n_out, n_in].
std::vector<double> reference_gptq(TensorType type, const std::vector<float>& w, int64_t n_out, int64_t n_in,
                                   const std::vector<double>& gram, double damp) {
  const int64_t B = 32;
  std::vector<double> H = gram;
  double mean = 0;
  for (int64_t i = 0; i < n_in; ++i) mean += H[static_cast<size_t>(i * n_in + i)];
  mean /= static_cast<double>(n_in);
  for (int64_t i = 0; i < n_in; ++i) H[static_cast<size_t>(i * n_in + i)] += damp * mean;
  const std::vector<double> U = upper_cholesky(inverse(H, n_in), n_in);
  std::vector<float> imp(static_cast<size_t>(n_in));
  for (int64_t i = 0; i < n_in; ++i)
    imp[static_cast<size_t>(i)] = static_cast<float>(gram[static_cast<size_t>(i * n_in + i)]);
  std::vector<double> Q(static_cast<size_t>(n_out * n_in));
  for (int64_t r = 0; r < n_out; ++r) {
    std::vector<double> W(w.begin() + r * n_in, w.begin() + (r + 1) * n_in);
    std::vector<double> vals;
    for (int64_t j = 0; j < n_in; ++j) {
      if (j % B == 0) {
        float blk[32];
        for (int64_t e = 0; e < B; ++e) blk[e] = static_cast<float>(W[static_cast<size_t>(j + e)]);
        std::vector<uint8_t> q(row_bytes(type, B));
        quantize_row(type, blk, q.data(), B, imp.data() + j);
        vals = block_values(type, q.data());
      }
      const double q = nearest(vals, W[static_cast<size_t>(j)]);
      const double e = (W[static_cast<size_t>(j)] - q) / U[static_cast<size_t>(j * n_in + j)];
      for (int64_t k = j; k < n_in; ++k)
        W[static_cast<size_t>(k)] -= e * U[static_cast<size_t>(j * n_in + k)];
      Q[static_cast<size_t>(r * n_in + j)] = q;
    }
  }
  return Q;
}

// sum_r (w_r - q_r)^T G (w_r - q_r): the layer's output error over the calibration rows.
double output_error(const std::vector<float>& w, const std::vector<double>& q, int64_t n_out, int64_t n_in,
                    const std::vector<double>& g) {
  double total = 0;
  std::vector<double> d(static_cast<size_t>(n_in));
  for (int64_t r = 0; r < n_out; ++r) {
    for (int64_t i = 0; i < n_in; ++i)
      d[static_cast<size_t>(i)] = w[static_cast<size_t>(r * n_in + i)] - q[static_cast<size_t>(r * n_in + i)];
    for (int64_t i = 0; i < n_in; ++i)
      for (int64_t j = 0; j < n_in; ++j)
        total += d[static_cast<size_t>(i)] * g[static_cast<size_t>(i * n_in + j)] * d[static_cast<size_t>(j)];
  }
  return total;
}

std::vector<double> dequantized(TensorType type, const std::vector<uint8_t>& q, int64_t n_out, int64_t n_in) {
  std::vector<float> row(static_cast<size_t>(n_in));
  std::vector<double> out;
  for (int64_t r = 0; r < n_out; ++r) {
    dequantize_row(type, q.data() + static_cast<size_t>(r) * row_bytes(type, n_in), row.data(), n_in);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

struct Case {
  TensorType type;
  int64_t n_out, n_in;
  int64_t batch;
};

class GptqVsReference : public ::testing::TestWithParam<Case> {};

TEST_P(GptqVsReference, MatchesFloat64Algorithm) {
  const Case c = GetParam();
  const int64_t rows = 4 * c.n_in;
  const std::vector<float> x = correlated_inputs(rows, c.n_in, 11);
  const std::vector<double> g = gram_of(x, rows, c.n_in);
  std::vector<float> gf(g.begin(), g.end());
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.0f, 0.05f);
  std::vector<float> w(static_cast<size_t>(c.n_out * c.n_in));
  for (auto& v : w) v = d(rng);

  GptqOptions o;
  o.damp = 0.01;
  o.batch = c.batch;
  std::vector<uint8_t> q(row_bytes(c.type, c.n_in) * static_cast<size_t>(c.n_out));
  ThreadPool pool(2);
  gptq_quantize(c.type, w.data(), c.n_out, c.n_in, gf.data(), o, q.data(), &pool);
  const std::vector<double> got = dequantized(c.type, q, c.n_out, c.n_in);
  const std::vector<double> ref = reference_gptq(c.type, w, c.n_out, c.n_in, g, o.damp);

  // Float vs double: a rare tie may round differently and shift what follows in that row.
  int64_t same = 0;
  for (size_t i = 0; i < got.size(); ++i)
    same += std::fabs(got[i] - ref[i]) <= 1e-6 * (1 + std::fabs(ref[i]));
  EXPECT_GE(static_cast<double>(same), 0.97 * static_cast<double>(got.size()));
  const double e_got = output_error(w, got, c.n_out, c.n_in, g);
  const double e_ref = output_error(w, ref, c.n_out, c.n_in, g);
  EXPECT_NEAR(e_got, e_ref, 0.02 * e_ref);

  // And GPTQ beats imatrix-weighted round-to-nearest on the layer's output error.
  std::vector<float> imp(static_cast<size_t>(c.n_in));
  for (int64_t i = 0; i < c.n_in; ++i) imp[static_cast<size_t>(i)] = gf[static_cast<size_t>(i * c.n_in + i)];
  std::vector<uint8_t> rtn(q.size());
  quantize_rows(c.type, w.data(), rtn.data(), c.n_out, c.n_in, imp.data(), nullptr);
  const double e_rtn = output_error(w, dequantized(c.type, rtn, c.n_out, c.n_in), c.n_out, c.n_in, g);
  EXPECT_LT(e_got, 0.9 * e_rtn);
}

INSTANTIATE_TEST_SUITE_P(Sizes, GptqVsReference,
                         ::testing::Values(Case{TensorType::Q4_0, 5, 64, 128},
                                           Case{TensorType::Q4_0, 33, 96, 32},
                                           Case{TensorType::Q8_0, 7, 64, 64},
                                           Case{TensorType::Q4_0, 1, 160, 64}));

TEST(Gptq, InverseUpperFactor) {
  for (int64_t n : {1, 31, 33, 130}) {
    const std::vector<float> x = correlated_inputs(3 * n, n, static_cast<uint32_t>(n));
    std::vector<double> H = gram_of(x, 3 * n, n);
    for (int64_t i = 0; i < n; ++i) H[static_cast<size_t>(i * n + i)] += 0.1;
    const std::vector<double> Href = H;
    std::vector<float> U;
    ASSERT_TRUE(inverse_upper_factor(H, n, &U, nullptr));
    // U^T U H = I.
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t k = 0; k < n; ++k) {
          double utu = 0;
          for (int64_t m = 0; m <= std::min(i, k); ++m)
            utu += double(U[static_cast<size_t>(m * n + i)]) * U[static_cast<size_t>(m * n + k)];
          s += utu * Href[static_cast<size_t>(k * n + j)];
        }
        ASSERT_NEAR(s, i == j ? 1.0 : 0.0, 2e-3) << n << " " << i << "," << j;
      }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < i; ++j) ASSERT_EQ(U[static_cast<size_t>(i * n + j)], 0.0f);
  }
  std::vector<double> bad = {1, 2, 2, 1};  // indefinite
  std::vector<float> U;
  EXPECT_FALSE(inverse_upper_factor(bad, 2, &U, nullptr));
}

TEST(Gptq, ActOrderKeepsBlocksWhole) {
  std::vector<double> diag(96);
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> d(0, 1);
  for (auto& v : diag) v = d(rng);
  std::vector<int64_t> perm(96);
  gptq_column_order(diag.data(), 96, 32, true, perm.data());
  std::vector<int> seen(96, 0);
  double prev_mass = 1e30;
  for (int b = 0; b < 3; ++b) {
    const int64_t blk = perm[static_cast<size_t>(b * 32)] / 32;
    double mass = 0;
    for (int e = 0; e < 32; ++e) {
      const int64_t col = perm[static_cast<size_t>(b * 32 + e)];
      EXPECT_EQ(col / 32, blk);
      ++seen[static_cast<size_t>(col)];
      mass += diag[static_cast<size_t>(col)];
      if (e > 0)
        EXPECT_GE(diag[static_cast<size_t>(perm[static_cast<size_t>(b * 32 + e - 1)])],
                  diag[static_cast<size_t>(col)]);
    }
    EXPECT_LE(mass, prev_mass);
    prev_mass = mass;
  }
  for (int s : seen) EXPECT_EQ(s, 1);
}

TEST(Gptq, ActOrderResultIsStillBetterThanRounding) {
  const int64_t n_out = 16, n_in = 128, rows = 512;
  const std::vector<float> x = correlated_inputs(rows, n_in, 21);
  const std::vector<double> g = gram_of(x, rows, n_in);
  std::vector<float> gf(g.begin(), g.end()), imp(static_cast<size_t>(n_in));
  for (int64_t i = 0; i < n_in; ++i) imp[static_cast<size_t>(i)] = gf[static_cast<size_t>(i * n_in + i)];
  std::mt19937 rng(4);
  std::normal_distribution<float> d(0.0f, 0.05f);
  std::vector<float> w(static_cast<size_t>(n_out * n_in));
  for (auto& v : w) v = d(rng);
  for (TensorType type : {TensorType::Q4_0, TensorType::Q4_K, TensorType::Q6_K, TensorType::Q5_1}) {
    if (n_in % type_traits(type).block_size != 0) continue;
    GptqOptions o;
    o.act_order = true;
    std::vector<uint8_t> q(row_bytes(type, n_in) * n_out), rtn(q.size());
    gptq_quantize(type, w.data(), n_out, n_in, gf.data(), o, q.data(), nullptr);
    quantize_rows(type, w.data(), rtn.data(), n_out, n_in, imp.data(), nullptr);
    EXPECT_LT(output_error(w, dequantized(type, q, n_out, n_in), n_out, n_in, g),
              output_error(w, dequantized(type, rtn, n_out, n_in), n_out, n_in, g))
        << type_name(type);
  }
}

TEST(Gptq, RefusesRowsThatDoNotSplitIntoBlocks) {
  std::vector<float> w(40), g(400, 0.0f);
  for (int i = 0; i < 20; ++i) g[static_cast<size_t>(i * 20 + i)] = 1;
  std::vector<uint8_t> q(1024);
  EXPECT_THROW(gptq_quantize(TensorType::Q4_0, w.data(), 2, 20, g.data(), {}, q.data(), nullptr), Error);
  EXPECT_THROW(gptq_quantize(TensorType::F16, w.data(), 2, 20, g.data(), {}, q.data(), nullptr), Error);
}

}  // namespace
}  // namespace strata::calib
