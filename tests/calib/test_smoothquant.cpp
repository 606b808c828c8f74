// SmoothQuant (smoothquant.h): the scale formula by hand, the folds leave the float model's
// logits unchanged (Xiao et al.'s premise: X diag(s)^-1 . diag(s) W = X W), the static ranges are
// the smoothed inputs' maxima, and a W8A8 model stays close to its float original.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backend/backend.h"
#include "calib/smoothquant.h"
#include "common/direct_session.h"
#include "common/fixtures.h"
#include "core/check.h"
#include "model/model.h"
#include "quant/quantize.h"

namespace strata::calib {
namespace {

TEST(SmoothQuant, ScalesFollowThePaper) {
  // s = x^a / w^(1 - a); 1 where there is nothing to migrate.
  const std::vector<float> x = {4.0f, 0.0f, 1.0f, 9.0f}, w = {1.0f, 2.0f, 0.0f, 0.25f};
  const auto half = smoothing_scales(x, w, 0.5f);
  EXPECT_FLOAT_EQ(half[0], 2.0f);
  EXPECT_FLOAT_EQ(half[1], 1.0f);
  EXPECT_FLOAT_EQ(half[2], 1.0f);
  EXPECT_FLOAT_EQ(half[3], 6.0f);  // sqrt(9) / sqrt(0.25)
  EXPECT_FLOAT_EQ(smoothing_scales(x, w, 1.0f)[3], 9.0f);
  EXPECT_FLOAT_EQ(smoothing_scales(x, w, 0.0f)[3], 4.0f);
}

std::string model_path() {
  return test::shared_path("models/stories260K/stories260K.gguf");
}

// Per-column max |x| with a few loud channels, for every decoder matrix of the model.
StatsMap outlier_stats(const ModelFile& f) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0.5f, 2.0f);
  StatsMap stats;
  for (const TensorInfo& t : f.tensors()) {
    if (t.name.rfind("blk.", 0) != 0 || t.n_dims != 2) continue;
    TensorStats s(t.ne[0], 1);
    s.abs_max.resize(static_cast<size_t>(t.ne[0]));
    for (size_t j = 0; j < s.abs_max.size(); ++j) s.abs_max[j] = u(rng) * (j % 17 == 3 ? 40.0f : 1.0f);
    stats[t.name] = s;
  }
  // q, k, v (and gate, up) read one input: the same statistics.
  for (auto& [name, s] : stats)
    for (const char* peer : {"attn_k.weight", "attn_v.weight", "ffn_up.weight"})
      if (name.size() > std::string(peer).size() && name.ends_with(peer)) {
        const std::string lead = name.substr(0, name.size() - std::string(peer).size()) +
                                 (std::string(peer) == "ffn_up.weight" ? "ffn_gate.weight" : "attn_q.weight");
        if (stats.count(lead)) s.abs_max = stats[lead].abs_max;
      }
  return stats;
}

std::vector<float> values(const TensorInfo& t) {
  std::vector<float> v(static_cast<size_t>(t.n_elements()));
  dequantize_row(t.type, t.data, v.data(), t.n_elements());
  return v;
}

std::vector<float> logits(std::unique_ptr<ModelFile> f, const ModelLoadOptions& mo = {}) {
  auto backend = make_cpu_backend(2);
  auto model = Model::load(std::move(f), *backend, mo);
  test::DirectSession session(*model, 16);
  return session.eval({1, 403, 407, 261, 378, 395, 280, 263, 17, 312}, true);
}

double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
    den += double{b[i]} * b[i];
  }
  return std::sqrt(num / den);
}

TEST(SmoothQuant, FoldsKeepTheFloatModelAndSetStaticRanges) {
  auto source = open_model_file(model_path());
  const StatsMap stats = outlier_stats(*source);
  const TensorInfo& q0 = *source->find_tensor("blk.0.attn_q.weight");
  const int64_t n = q0.ne[0];
  // s of blk.0's attention fold, in float64 from the paper's formula over q, k and v.
  std::vector<double> w_max(static_cast<size_t>(n), 0.0);
  for (const char* m : {"blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight"}) {
    const auto v = values(*source->find_tensor(m));
    for (size_t i = 0; i < v.size(); ++i) w_max[i % n] = std::max(w_max[i % n], std::fabs(double{v[i]}));
  }
  const std::vector<float> norm0 = values(*source->find_tensor("blk.0.attn_norm.weight"));
  const auto& x_max = stats.at("blk.0.attn_q.weight").abs_max;

  W8A8Calibration c = calibrate_w8a8(open_model_file(model_path()), stats, 0.5f);
  const std::vector<float> norm1 = values(*c.file->find_tensor("blk.0.attn_norm.weight"));
  double want_q_absmax = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    const double s = std::sqrt(double{x_max[j]}) / std::sqrt(w_max[j]);
    EXPECT_NEAR(norm1[j], norm0[j] / s, 1e-5 * std::fabs(norm0[j] / s)) << j;
    want_q_absmax = std::max(want_q_absmax, x_max[j] / s);
  }
  EXPECT_NEAR(c.act_absmax.at("blk.0.attn_q.weight"), want_q_absmax, 1e-5 * want_q_absmax);
  // o_proj is not smoothed: its range is its input's max.
  const auto& o_max = stats.at("blk.0.attn_output.weight").abs_max;
  EXPECT_FLOAT_EQ(c.act_absmax.at("blk.0.attn_output.weight"), *std::max_element(o_max.begin(), o_max.end()));

  const std::vector<float> want = logits(open_model_file(model_path()));
  EXPECT_LT(rel_l2(logits(std::move(c.file)), want), 1e-4);
}

TEST(SmoothQuant, W8A8ModelStaysCloseToFloat) {
  const std::vector<float> want = logits(open_model_file(model_path()));
  ModelLoadOptions mo;
  auto plan = std::make_shared<W8A8Plan>();
  mo.w8a8 = plan;
  const double dynamic = rel_l2(logits(open_model_file(model_path()), mo), want);
  EXPECT_GT(dynamic, 0.0);  // the matrices really are quantized
  EXPECT_LT(dynamic, 0.05);
  // Static with no ranges for a matrix is an error naming it.
  plan->static_act = true;
  try {
    logits(open_model_file(model_path()), mo);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blk.0."), std::string::npos) << e.what();
  }
}

TEST(SmoothQuant, BadInputIsAnError) {
  auto f = open_model_file(model_path());
  EXPECT_THROW(calibrate_w8a8(open_model_file(model_path()), outlier_stats(*f), 1.5f), Error);
  StatsMap no_max = outlier_stats(*f);
  for (auto& [name, s] : no_max) s.abs_max.clear();
  EXPECT_THROW(calibrate_w8a8(open_model_file(model_path()), no_max, 0.5f), Error);
}

}  // namespace
}  // namespace strata::calib
