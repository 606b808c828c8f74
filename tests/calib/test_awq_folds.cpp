// AWQ's folds leave the unquantized layer's function unchanged (the paper's premise: W diag(s)
// with x / s folded into the op before). A small grouped-query Llama layer is folded by
// apply_awq on statistics of activations with outlier channels, and its sub-blocks are
// evaluated in float64 before and after: attn_norm -> q, k, v; v -> o (attention mixes
// positions with the same weights for every channel of a head, so o(v x) per channel is the
// invariant); ffn_norm -> gate, up and up -> down (silu(gate) * up is linear in up).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "calib/awq.h"
#include "calib/layer_folds.h"
#include "core/thread_pool.h"

namespace strata::calib {
namespace {

constexpr int64_t kEmbd = 64, kHead = 4, kHeadKv = 2, kHeadDim = 16, kFf = 96;

std::vector<float> random_vec(size_t n, std::mt19937& rng, float sigma) {
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Statistics of rows with a few loud channels (as LLM activations have).
InputStats stats_of(int64_t n, std::mt19937& rng) {
  const int64_t rows = 4 * n;
  std::vector<float> x = random_vec(static_cast<size_t>(rows * n), rng, 1.0f);
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t i = 0; i < n; i += 9) x[static_cast<size_t>(t * n + i)] *= 12.0f;
  InputStats s;
  s.n = n;
  s.gram.assign(static_cast<size_t>(n * n), 0.0f);
  s.msq.assign(static_cast<size_t>(n), 0.0f);
  s.mean_abs.assign(static_cast<size_t>(n), 0.0f);
  s.abs_max.assign(static_cast<size_t>(n), 0.0f);
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t i = 0; i < n; ++i) {
      const float v = x[static_cast<size_t>(t * n + i)];
      s.mean_abs[static_cast<size_t>(i)] += std::fabs(v) / rows;
      s.abs_max[static_cast<size_t>(i)] = std::max(s.abs_max[static_cast<size_t>(i)], std::fabs(v));
      for (int64_t j = 0; j < n; ++j)
        s.gram[static_cast<size_t>(i * n + j)] += v * x[static_cast<size_t>(t * n + j)] / rows;
    }
  for (int64_t i = 0; i < n; ++i) s.msq[static_cast<size_t>(i)] = s.gram[static_cast<size_t>(i * n + i)];
  return s;
}

MatrixJob job(const std::string& name, int64_t n_out, int64_t n_in, std::mt19937& rng, const InputStats& in) {
  MatrixJob j;
  j.m.name = name;
  j.m.n_out = n_out;
  j.m.n_in = n_in;
  j.m.type = TensorType::Q4_0;
  j.m.w = random_vec(static_cast<size_t>(n_out * n_in), rng, 0.1f);
  j.original = j.m.w;
  j.in = in;
  j.in_orig = in;
  return j;
}

// y = W x in float64.
std::vector<double> mul(const WeightMatrix& m, const std::vector<double>& x) {
  std::vector<double> y(static_cast<size_t>(m.n_out), 0.0);
  for (int64_t r = 0; r < m.n_out; ++r)
    for (int64_t i = 0; i < m.n_in; ++i)
      y[static_cast<size_t>(r)] += double(m.row(r)[i]) * x[static_cast<size_t>(i)];
  return y;
}

std::vector<double> scaled(const std::vector<float>& g, const std::vector<double>& h) {
  std::vector<double> y(h.size());
  for (size_t i = 0; i < h.size(); ++i) y[i] = double(g[i]) * h[i];
  return y;
}

void expect_close(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  double scale = 0;
  for (double v : b) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], 1e-4 * (scale + 1e-12)) << what << " [" << i << "]";
}

// The four sub-block outputs of a layer for one normalised input h (before the norm weights).
struct Outputs {
  std::vector<double> q, k, v, o, ffn;
};

Outputs evaluate(const LayerWork& L, const std::vector<double>& h, const std::vector<double>& z_att) {
  Outputs out;
  const std::vector<double> a = scaled(L.vecs.at("attn_norm.weight"), h);
  out.q = mul(L.mats.at("attn_q.weight").m, a);
  out.k = mul(L.mats.at("attn_k.weight").m, a);
  out.v = mul(L.mats.at("attn_v.weight").m, a);
  // o over the attention output of v applied to the normed z_att (each head reads its kv head's
  // channels).
  const std::vector<double> vz =
      mul(L.mats.at("attn_v.weight").m, scaled(L.vecs.at("attn_norm.weight"), z_att));
  const std::vector<int32_t> map = gqa_channel_map(FoldShape{kHead, kHeadKv, kHeadDim});
  std::vector<double> att(static_cast<size_t>(kHead * kHeadDim));
  for (size_t c = 0; c < att.size(); ++c) att[c] = vz[static_cast<size_t>(map[c])];
  out.o = mul(L.mats.at("attn_output.weight").m, att);
  const std::vector<double> f = scaled(L.vecs.at("ffn_norm.weight"), h);
  const std::vector<double> gate = mul(L.mats.at("ffn_gate.weight").m, f),
                            up = mul(L.mats.at("ffn_up.weight").m, f);
  std::vector<double> act(gate.size());
  for (size_t i = 0; i < act.size(); ++i) act[i] = gate[i] / (1 + std::exp(-gate[i])) * up[i];
  out.ffn = mul(L.mats.at("ffn_down.weight").m, act);
  return out;
}

TEST(AwqFolds, FoldedLayerComputesTheSameFunction) {
  std::mt19937 rng(42);
  LayerWork L;
  const InputStats x_attn = stats_of(kEmbd, rng), x_o = stats_of(kHead * kHeadDim, rng),
                   x_ffn = stats_of(kEmbd, rng), x_down = stats_of(kFf, rng);
  L.mats.emplace("attn_q.weight", job("q", kHead * kHeadDim, kEmbd, rng, x_attn));
  L.mats.emplace("attn_k.weight", job("k", kHeadKv * kHeadDim, kEmbd, rng, x_attn));
  L.mats.emplace("attn_v.weight", job("v", kHeadKv * kHeadDim, kEmbd, rng, x_attn));
  L.mats.emplace("attn_output.weight", job("o", kEmbd, kHead * kHeadDim, rng, x_o));
  L.mats.emplace("ffn_gate.weight", job("gate", kFf, kEmbd, rng, x_ffn));
  L.mats.emplace("ffn_up.weight", job("up", kFf, kEmbd, rng, x_ffn));
  L.mats.emplace("ffn_down.weight", job("down", kEmbd, kFf, rng, x_down));
  std::vector<float> g1 = random_vec(kEmbd, rng, 0.3f), g2 = random_vec(kEmbd, rng, 0.3f);
  for (auto& v : g1) v += 1.0f;
  for (auto& v : g2) v += 1.0f;
  L.vecs.emplace("attn_norm.weight", g1);
  L.vecs.emplace("ffn_norm.weight", g2);

  std::vector<std::vector<double>> hs, zs;
  std::vector<Outputs> before;
  for (int t = 0; t < 5; ++t) {
    std::vector<float> h = random_vec(kEmbd, rng, 1.0f), z = random_vec(kEmbd, rng, 1.0f);
    hs.emplace_back(h.begin(), h.end());
    zs.emplace_back(z.begin(), z.end());
    before.push_back(evaluate(L, hs.back(), zs.back()));
  }
  ThreadPool pool(2);
  const FoldLog log = apply_awq(L, FoldShape{kHead, kHeadKv, kHeadDim}, AwqOptions{}, &pool);
  ASSERT_EQ(log.lines.size(), 4u);  // all four folds applied
  // The fold really changed the weights (outlier channels get s != 1).
  bool changed = false;
  for (int64_t i = 0; i < kEmbd; ++i)
    changed |=
        std::fabs(L.vecs.at("attn_norm.weight")[static_cast<size_t>(i)] - g1[static_cast<size_t>(i)]) > 1e-3f;
  EXPECT_TRUE(changed);
  for (size_t t = 0; t < hs.size(); ++t) {
    const Outputs after = evaluate(L, hs[t], zs[t]);
    expect_close(after.q, before[t].q, "q");
    expect_close(after.k, before[t].k, "k");
    // v alone is not invariant: its rows are divided by the v -> o scales, which o undoes.
    expect_close(after.o, before[t].o, "v -> o");
    expect_close(after.ffn, before[t].ffn, "ffn");
  }
  // The working statistics follow the fold: q's input is x / s.
  const MatrixJob& q = L.mats.at("attn_q.weight");
  ASSERT_EQ(q.col_scale.size(), static_cast<size_t>(kEmbd));
  for (int64_t i = 0; i < kEmbd; ++i) {
    const double s = q.col_scale[static_cast<size_t>(i)];
    EXPECT_NEAR(q.in->msq[static_cast<size_t>(i)], x_attn.msq[static_cast<size_t>(i)] / (s * s),
                1e-4 * x_attn.msq[static_cast<size_t>(i)] / (s * s));
  }
}

TEST(AwqFolds, ScaleSearchNeverLosesToPlainQuantization) {
  std::mt19937 rng(8);
  for (int64_t n : {32, 96, 256}) {
    const InputStats in = stats_of(n, rng);
    MatrixJob j = job("m", 24, n, rng, in);
    for (TensorType type : {TensorType::Q4_0, TensorType::Q4_K, TensorType::Q8_0}) {
      if (n % type_traits(type).block_size) continue;
      j.m.type = type;
      const AwqScales r = awq_search_scales({&j.m}, in, {}, n, AwqOptions{}, nullptr);
      ASSERT_EQ(r.s.size(), static_cast<size_t>(n));
      EXPECT_LE(r.loss, r.loss_plain * (1 + 1e-9)) << type_name(type);
      for (float s : r.s) EXPECT_TRUE(std::isfinite(s) && s > 0);
    }
  }
}

}  // namespace
}  // namespace strata::calib
