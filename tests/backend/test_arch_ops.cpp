// The Backend ops of the newer architectures on the CPU backend against float64 references
// written here from the papers and model cards: MoE routing (Mixtral's softmax top-k, DeepSeek
// V3's sigmoid router with expert groups and selection bias, gpt-oss's softmax over the chosen
// logits), grouped expert matmuls, fused gate/up activations, soft-capping, and YaRN / LongRoPE
// rotary embeddings.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "backend/backend.h"
#include "backend/cpu/matmul.h"
#include "core/thread_pool.h"
#include "formats/model_file.h"
#include "quant/quantize.h"
#include "test_kernels_util.h"

namespace strata {
namespace {

std::vector<float> randn(size_t n, uint32_t seed, float scale = 1.0f) {
  return cpu::testing::random_floats(n, seed, scale);
}

// ---- routing ---------------------------------------------------------------------------------

struct Routed {
  std::vector<int32_t> ids;
  std::vector<double> weights;
};

// The routers as their papers / model cards define them, in double.
Routed reference_route(const std::vector<float>& logits, const MoeRouting& r) {
  const int n = r.n_experts;
  std::vector<double> p(static_cast<size_t>(n));
  if (r.gating == MoeGating::Softmax) {
    const double mx = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += p[i] = std::exp(logits[i] - mx);
    for (double& v : p) v /= sum;
  } else if (r.gating == MoeGating::Sigmoid) {
    for (int i = 0; i < n; ++i) p[i] = 1.0 / (1.0 + std::exp(-double{logits[i]}));
  } else {
    for (int i = 0; i < n; ++i) p[i] = logits[i];
  }
  std::vector<double> s(p);
  if (r.selection_bias)
    for (int i = 0; i < n; ++i) s[i] += r.selection_bias[i];
  std::vector<bool> eligible(static_cast<size_t>(n), true);
  if (r.n_groups > 1) {
    const int per = n / r.n_groups;
    std::vector<std::pair<double, int>> groups;
    for (int g = 0; g < r.n_groups; ++g) {
      std::vector<double> v(s.begin() + g * per, s.begin() + (g + 1) * per);
      std::sort(v.rbegin(), v.rend());
      groups.push_back({v[0] + v[1], g});
    }
    std::stable_sort(groups.begin(), groups.end(), [](auto& a, auto& b) { return a.first > b.first; });
    std::fill(eligible.begin(), eligible.end(), false);
    for (int i = 0; i < r.n_groups_used; ++i)
      for (int e = 0; e < per; ++e) eligible[static_cast<size_t>(groups[i].second * per + e)] = true;
  }
  std::vector<int32_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (eligible[a] != eligible[b]) return bool(eligible[a]);
    return s[a] > s[b];
  });
  Routed out;
  out.ids.assign(order.begin(), order.begin() + r.n_used);
  for (int32_t id : out.ids) out.weights.push_back(p[static_cast<size_t>(id)]);
  if (r.gating == MoeGating::SoftmaxWeight) {
    const double mx = *std::max_element(out.weights.begin(), out.weights.end());
    double sum = 0;
    for (double& w : out.weights) sum += w = std::exp(w - mx);
    for (double& w : out.weights) w /= sum;
  }
  if (r.norm_weights) {
    const double sum = std::accumulate(out.weights.begin(), out.weights.end(), 0.0);
    for (double& w : out.weights) w /= sum;
  }
  for (double& w : out.weights) w *= r.weights_scale;
  return out;
}

struct RouteCase {
  const char* what;
  MoeRouting r;
  std::vector<float> bias;  // selection bias, or empty
};

std::vector<RouteCase> route_cases() {
  std::vector<RouteCase> cases;
  MoeRouting mixtral;  // Mixtral / Qwen3-MoE: softmax, top-2 renormalized
  mixtral.n_experts = 8;
  mixtral.n_used = 2;
  mixtral.norm_weights = true;
  cases.push_back({"softmax top-2 normalized", mixtral, {}});
  MoeRouting lite = mixtral;  // DeepSeek V2-Lite: softmax, top-6 of 64, not normalized
  lite.n_experts = 64;
  lite.n_used = 6;
  lite.norm_weights = false;
  cases.push_back({"softmax top-6 of 64 raw", lite, {}});
  MoeRouting v3;  // DeepSeek V3: sigmoid, bias for selection, 8 groups of which 4, weights x 2.5
  v3.n_experts = 64;
  v3.n_used = 8;
  v3.gating = MoeGating::Sigmoid;
  v3.norm_weights = true;
  v3.weights_scale = 2.5f;
  v3.n_groups = 8;
  v3.n_groups_used = 4;
  cases.push_back({"sigmoid grouped biased", v3, randn(64, 99, 0.3f)});
  MoeRouting oss;  // gpt-oss: top-4 of 32 by logit, softmax over the four
  oss.n_experts = 32;
  oss.n_used = 4;
  oss.gating = MoeGating::SoftmaxWeight;
  cases.push_back({"softmax over chosen logits", oss, {}});
  MoeRouting all = mixtral;  // every expert used
  all.n_experts = 3;
  all.n_used = 3;
  cases.push_back({"all experts", all, {}});
  return cases;
}

TEST(MoeRoute, MatchesReferenceRouters) {
  auto backend = make_cpu_backend(1);
  for (const RouteCase& c : route_cases()) {
    SCOPED_TRACE(c.what);
    MoeRouting r = c.r;
    if (!c.bias.empty()) r.selection_bias = c.bias.data();
    const int64_t n_tokens = 37;
    const auto logits = randn(static_cast<size_t>(n_tokens * r.n_experts), 7, 2.0f);
    std::vector<int32_t> ids(static_cast<size_t>(n_tokens * r.n_used));
    std::vector<float> w(ids.size());
    backend->moe_route(logits.data(), n_tokens, r, ids.data(), w.data());
    for (int64_t t = 0; t < n_tokens; ++t) {
      const std::vector<float> row(logits.begin() + t * r.n_experts, logits.begin() + (t + 1) * r.n_experts);
      const Routed ref = reference_route(row, r);
      for (int j = 0; j < r.n_used; ++j) {
        ASSERT_EQ(ids[static_cast<size_t>(t * r.n_used + j)], ref.ids[static_cast<size_t>(j)])
            << "token " << t;
        ASSERT_NEAR(w[static_cast<size_t>(t * r.n_used + j)], ref.weights[static_cast<size_t>(j)], 2e-6)
            << "token " << t;
      }
    }
  }
}

TEST(MoeRoute, GroupsExcludeTheBestSingleExpert) {
  // 4 groups of 2; expert 0 is the single best, but its group (0, 1) sums lowest, so with the
  // 2 best groups {2: 4+5, 3: 6+7} it cannot be chosen: the answer is experts 6 and 4.
  MoeRouting r;
  r.n_experts = 8;
  r.n_used = 2;
  r.gating = MoeGating::Sigmoid;
  r.n_groups = 4;
  r.n_groups_used = 2;
  const float logits[8] = {5.0f, -5.0f, 0.0f, 0.1f, 2.0f, 1.0f, 3.0f, 0.5f};
  auto backend = make_cpu_backend(1);
  int32_t ids[2];
  float w[2];
  backend->moe_route(logits, 1, r, ids, w);
  EXPECT_EQ(ids[0], 6);
  EXPECT_EQ(ids[1], 4);
  EXPECT_NEAR(w[0], 1.0 / (1.0 + std::exp(-3.0)), 1e-6);
  EXPECT_NEAR(w[1], 1.0 / (1.0 + std::exp(-2.0)), 1e-6);
  // The selection bias changes the choice, not the weights.
  const float bias[8] = {0, 0, 0, 0, 0, 2.0f, 0, 0};  // expert 5: 1 + 2 > 3
  r.selection_bias = bias;
  backend->moe_route(logits, 1, r, ids, w);
  EXPECT_EQ(ids[0], 5);
  EXPECT_EQ(ids[1], 6);
  EXPECT_NEAR(w[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
}

// ---- grouped matmul ---------------------------------------------------------------------------

struct StackCase {
  TensorType type;
  int64_t n_in, n_out, n_mats, n_tokens, n_slots;
  bool broadcast_x;  // one input row per token for all its slots (gate/up of MoE)
};

class MatmulStackTest : public ::testing::TestWithParam<StackCase> {};

TEST_P(MatmulStackTest, EveryRowIsItsMatrixTimesItsInput) {
  const StackCase c = GetParam();
  const size_t mat_bytes = row_bytes(c.type, c.n_in) * static_cast<size_t>(c.n_out);
  std::vector<uint8_t> w(mat_bytes * static_cast<size_t>(c.n_mats));
  cpu::testing::fill_random_rows(c.type, c.n_in, c.n_out * c.n_mats, row_bytes(c.type, c.n_in), w.data(), 11);
  TensorInfo t;
  t.name = "blk.0.ffn_up_exps.weight";
  t.type = c.type;
  t.n_dims = 3;
  t.ne = {c.n_in, c.n_out, c.n_mats, 1};
  t.data = w.data();
  t.nbytes = w.size();
  for (int threads : {1, 3}) {
    auto backend = make_cpu_backend(threads);
    auto stack = backend->prepare_matrix_stack(t);
    ASSERT_EQ(stack->n_mats(), c.n_mats);
    ASSERT_EQ(stack->matrix_bytes(), mat_bytes);
    // Ids skewed to the low matrices and never the last one: unused matrices are skipped.
    std::mt19937 gen(5);
    std::vector<int32_t> ids(static_cast<size_t>(c.n_tokens * c.n_slots));
    for (auto& id : ids) id = static_cast<int32_t>(std::min<int64_t>(gen() % (c.n_mats + 2), c.n_mats - 2));
    const int64_t x_rows = c.broadcast_x ? c.n_tokens : c.n_tokens * c.n_slots;
    const int64_t x_row_stride = c.n_in + 5;  // rows farther apart than their width
    const auto x = randn(static_cast<size_t>(x_rows * x_row_stride), 12);
    const SlotLayout xl{c.broadcast_x ? x_row_stride : x_row_stride * c.n_slots,
                        c.broadcast_x ? 0 : x_row_stride};
    const int64_t y_slot = c.n_out + 3;
    const SlotLayout yl{y_slot * c.n_slots, y_slot};
    std::vector<float> y(static_cast<size_t>(c.n_tokens * c.n_slots * y_slot), -7.0f);
    backend->matmul_stack(*stack, ids.data(), c.n_tokens, c.n_slots, x.data(), xl, y.data(), yl);

    ThreadPool pool(1);
    for (int64_t tk = 0; tk < c.n_tokens; ++tk)
      for (int64_t s = 0; s < c.n_slots; ++s) {
        const int32_t id = ids[static_cast<size_t>(tk * c.n_slots + s)];
        const float* xr = x.data() + tk * xl.token_stride + s * xl.slot_stride;
        const float* yr = y.data() + tk * yl.token_stride + s * yl.slot_stride;
        // Exactly what a plain matmul of that matrix gives the row alone (kernels are batch
        // invariant, so grouping must not change a bit) ...
        auto single =
            cpu::pack_matrix(c.type, c.n_in, c.n_out, w.data() + mat_bytes * static_cast<size_t>(id));
        std::vector<float> want(static_cast<size_t>(c.n_out));
        cpu::matmul(pool, *single, xr, want.data(), 1);
        // ... and close to the exact product of the dequantized weights.
        for (int64_t o = 0; o < c.n_out; ++o) {
          ASSERT_EQ(yr[o], want[static_cast<size_t>(o)]) << "token " << tk << " slot " << s << " row " << o;
          const auto wd = cpu::testing::dequantized(
              c.type, w.data() + mat_bytes * static_cast<size_t>(id) + row_bytes(c.type, c.n_in) * o, c.n_in);
          double exact = 0, mag = 0;
          for (int64_t i = 0; i < c.n_in; ++i) {
            exact += wd[static_cast<size_t>(i)] * xr[i];
            mag += std::fabs(wd[static_cast<size_t>(i)] * xr[i]);
          }
          const double tol = cpu::testing::is_float_type(c.type) ? 1e-4 * mag : 2e-2 * mag;
          ASSERT_NEAR(yr[o], exact, tol + 1e-6);
        }
        EXPECT_EQ(yr[c.n_out], -7.0f);  // the padding between rows is untouched
      }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, MatmulStackTest,
                         ::testing::Values(StackCase{TensorType::F32, 64, 33, 5, 7, 2, true},
                                           StackCase{TensorType::F16, 96, 17, 4, 1, 3, true},
                                           StackCase{TensorType::Q8_0, 128, 40, 6, 19, 4, false},
                                           StackCase{TensorType::Q4_0, 64, 64, 3, 33, 1, false},
                                           StackCase{TensorType::Q4_K, 256, 24, 5, 9, 2, true},
                                           StackCase{TensorType::Q6_K, 256, 16, 4, 4, 4, false}),
                         [](const auto& info) {
                           return std::string(type_name(info.param.type)) + "_" + std::to_string(info.index);
                         });

TEST(MatmulStack, BadMatrixIndexIsAnInvariantViolation) {
  std::vector<float> w(4 * 32 * 2, 0.5f);
  TensorInfo t;
  t.type = TensorType::F32;
  t.n_dims = 3;
  t.ne = {32, 4, 2, 1};
  t.data = w.data();
  auto backend = make_cpu_backend(1);
  auto stack = backend->prepare_matrix_stack(t);
  const int32_t ids[1] = {2};
  std::vector<float> x(32, 1.0f), y(4);
  EXPECT_DEATH(backend->matmul_stack(*stack, ids, 1, 1, x.data(), {32, 0}, y.data(), {4, 4}), "out of range");
}

// ---- element-wise ops through the backend -----------------------------------------------------

TEST(ArchOps, FusedGateUpHalvesAndCombining) {
  auto backend = make_cpu_backend(2);
  const int64_t rows = 5, n = 300;
  const auto gu = randn(static_cast<size_t>(rows * 2 * n), 21, 2.0f);  // phi3: [rows, gate | up]
  std::vector<float> out(static_cast<size_t>(rows * n));
  backend->glu(GluKind::Silu, gu.data(), gu.data() + n, 2 * n, out.data(), rows, n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) {
      const double g = gu[static_cast<size_t>(r * 2 * n + i)], u = gu[static_cast<size_t>(r * 2 * n + n + i)];
      ASSERT_NEAR(out[static_cast<size_t>(r * n + i)], g / (1 + std::exp(-g)) * u,
                  1e-5 * (1 + std::fabs(g * u)));
    }
  backend->glu(GluKind::GeluTanh, gu.data(), gu.data() + n, 2 * n, out.data(), rows, n);
  const double g0 = gu[0], u0 = gu[n];
  EXPECT_NEAR(out[0], 0.5 * g0 * (1 + std::tanh(std::sqrt(2 / M_PI) * (g0 + 0.044715 * g0 * g0 * g0))) * u0,
              1e-5);

  // Combining 3 experts per token with their weights, and per-expert biases.
  const int64_t tokens = 4, slots = 3, width = 70;
  const auto y = randn(static_cast<size_t>(tokens * slots * width), 22);
  const auto wts = randn(static_cast<size_t>(tokens * slots), 23);
  std::vector<float> sum(static_cast<size_t>(tokens * width));
  backend->weighted_sum(y.data(), wts.data(), tokens, slots, width, sum.data());
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t i = 0; i < width; ++i) {
      double ref = 0;
      for (int64_t s = 0; s < slots; ++s)
        ref += double{wts[static_cast<size_t>(t * slots + s)]} *
               y[static_cast<size_t>((t * slots + s) * width + i)];
      ASSERT_NEAR(sum[static_cast<size_t>(t * width + i)], ref, 1e-5);
    }
  auto yb = y;
  const auto bias = randn(static_cast<size_t>(5 * width), 24);
  const std::vector<int32_t> ids = {4, 0, 2, 1, 1, 3, 0, 4, 2, 3, 3, 3};
  backend->add_stack_bias(yb.data(), bias.data(), ids.data(), tokens, slots, width);
  for (size_t r = 0; r < ids.size(); ++r)
    for (int64_t i = 0; i < width; ++i)
      ASSERT_EQ(yb[r * width + i], y[r * width + i] + bias[static_cast<size_t>(ids[r] * width + i)]);
}

TEST(ArchOps, SoftcapScaleAndCopyRows) {
  auto backend = make_cpu_backend(2);
  const auto x0 = randn(100000, 31, 60.0f);  // large enough to run on the pool
  auto x = x0;
  backend->softcap(x.data(), static_cast<int64_t>(x.size()), 30.0f);
  for (size_t i = 0; i < x.size(); i += 97) ASSERT_NEAR(x[i], 30.0 * std::tanh(x0[i] / 30.0), 1e-4);
  x = x0;
  backend->scale(x.data(), static_cast<int64_t>(x.size()), 0.5f);
  for (size_t i = 0; i < x.size(); i += 97) ASSERT_EQ(x[i], x0[i] * 0.5f);
  std::vector<float> dst(3 * 10, 0.0f);
  backend->copy_rows(x0.data() + 2, 7, dst.data() + 1, 10, 3, 4);
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 10; ++i)
      EXPECT_EQ(dst[static_cast<size_t>(r * 10 + i)],
                (i >= 1 && i < 5) ? x0[static_cast<size_t>(2 + r * 7 + i - 1)] : 0.0f);
}

// ---- rotary embeddings ------------------------------------------------------------------------

// Angle of pair i at position `pos` under YaRN as Hugging Face transformers defines it
// (_compute_yarn_parameters): the correction range [floor(d(beta_fast)), ceil(d(beta_slow))] of
// d(r) = n * ln(L / (2 pi r)) / (2 ln base), a linear ramp over the pair index between them, and
// the frequency blend interp * (1 - extrap_weight) + orig * extrap_weight.
double yarn_angle(int pos, int i, int n, double base, double factor, double L, double beta_fast,
                  double beta_slow) {
  auto corr = [&](double rot) { return n * std::log(L / (2 * M_PI * rot)) / (2 * std::log(base)); };
  const double low = std::max(0.0, std::floor(corr(beta_fast))),
               high = std::min(n - 1.0, std::ceil(corr(beta_slow)));
  const double ramp = std::min(1.0, std::max(0.0, (i - low) / std::max(0.001, high - low)));
  const double extrap_weight = 1.0 - ramp;
  const double f = std::pow(base, -2.0 * i / n);
  return pos * (f / factor * (1 - extrap_weight) + f * extrap_weight);
}

TEST(Rope, YarnLongRopeAndAttnFactor) {
  auto backend = make_cpu_backend(1);
  const int hd = 64, heads = 2;
  const std::vector<int32_t> pos = {0, 1, 17, 1000, 5000};
  const auto x0 = randn(pos.size() * heads * hd, 41);
  struct Variant {
    const char* what;
    RopeParams p;
    std::vector<float> factors;
  };
  std::vector<Variant> variants;
  RopeParams yarn;  // gpt-oss's: base 150000, factor 32 over 4096, mscale 1 + 0.1 ln 32
  yarn.style = RopeStyle::NeoX;
  yarn.n_rot = hd;
  yarn.freq_base = 150000.0f;
  yarn.scaling = RopeParams::Scaling::Yarn;
  yarn.factor = 32.0f;
  yarn.yarn_original_ctx = 4096;
  yarn.attn_factor = 1.0f + 0.1f * std::log(32.0f);
  variants.push_back({"yarn", yarn, {}});
  RopeParams longrope;  // phi3: per-pair divisors and an attention factor, interleaved here
  longrope.n_rot = hd;
  longrope.attn_factor = 1.19f;
  std::vector<float> ff(hd / 2);
  for (int i = 0; i < hd / 2; ++i) ff[static_cast<size_t>(i)] = 1.0f + 0.37f * i;
  variants.push_back({"longrope", longrope, ff});
  RopeParams linear;  // gemma3's global layers: linear factor 8
  linear.style = RopeStyle::NeoX;
  linear.n_rot = hd;
  linear.freq_base = 1e6f;
  linear.scaling = RopeParams::Scaling::Linear;
  linear.factor = 8.0f;
  variants.push_back({"linear", linear, {}});
  // Alternate the variants so the backend keeps several tables at once.
  for (int round = 0; round < 2; ++round)
    for (Variant& v : variants) {
      SCOPED_TRACE(v.what);
      if (!v.factors.empty()) v.p.freq_factors = v.factors.data();
      auto x = x0;
      backend->rope(x.data(), pos.data(), static_cast<int64_t>(pos.size()), heads, hd, v.p);
      for (size_t t = 0; t < pos.size(); ++t)
        for (int h = 0; h < heads; ++h)
          for (int i = 0; i < hd / 2; ++i) {
            double angle;
            if (v.p.scaling == RopeParams::Scaling::Yarn)
              angle = yarn_angle(pos[t], i, hd, 150000.0, 32.0, 4096.0, 32.0, 1.0);
            else
              angle = pos[t] * std::pow(double{v.p.freq_base}, -2.0 * i / hd) / v.p.factor /
                      (v.factors.empty() ? 1.0 : v.factors[static_cast<size_t>(i)]);
            const bool neox = v.p.style == RopeStyle::NeoX;
            const size_t a = t * heads * hd + h * hd + (neox ? i : 2 * i);
            const size_t b = neox ? a + hd / 2 : a + 1;
            const double c = std::cos(angle) * v.p.attn_factor, s = std::sin(angle) * v.p.attn_factor;
            ASSERT_NEAR(x[a], x0[a] * c - x0[b] * s, 2e-5) << "pos " << pos[t] << " pair " << i;
            ASSERT_NEAR(x[b], x0[a] * s + x0[b] * c, 2e-5) << "pos " << pos[t] << " pair " << i;
          }
    }
}

TEST(Rope, CachedTablesFollowTheFactorValuesNotTheirAddress) {
  // A model unloaded and another loaded on the same backend may reuse the factors' memory.
  auto backend = make_cpu_backend(1);
  std::vector<float> factors(8, 1.0f);
  RopeParams p;
  p.n_rot = 16;
  p.freq_factors = factors.data();
  const std::vector<int32_t> pos = {5};
  const auto x0 = randn(16, 51);
  auto a = x0;
  backend->rope(a.data(), pos.data(), 1, 1, 16, p);
  std::fill(factors.begin(), factors.end(), 4.0f);
  auto b = x0;
  backend->rope(b.data(), pos.data(), 1, 1, 16, p);
  const double angle = 5.0 / 4.0;  // pair 0: base^0 = 1, divided by the new factor
  EXPECT_NEAR(b[0], x0[0] * std::cos(angle) - x0[1] * std::sin(angle), 1e-5);
  EXPECT_NE(a[0], b[0]);
}

}  // namespace
}  // namespace strata
