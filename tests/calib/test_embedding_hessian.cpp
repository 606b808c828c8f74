// The token embedding's readers' Hessian (calib/embedding_hessian.h), checked against a float64
// computation written here, and GPTQ under it, alone and as `strata quantize --method gptq` does
// it to the untied embedding of a small synthetic model: the readers' error
// sum_rows (w - v)^T H (w - v), computed here in float64 on rows decoded by the scalar
// dequantizer, is below round-to-nearest's; by default (every reader weight 0), or with --method rtn, the
// rows are round-to-nearest's byte for byte.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "calib/embedding_hessian.h"
#include "calib/gptq.h"
#include "calib/quant_plan.h"
#include "calib/quantize_job.h"
#include "calib/scale_refit.h"
#include "core/thread_pool.h"
#include "formats/model_file.h"
#include "model/synthetic_model.h"
#include "quant/quantize.h"

namespace strata::calib {
namespace {

std::vector<float> randn(size_t n, std::mt19937& rng, float sd) {
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// identity * I + sum_g weight_g * n / tr(H_g) * H_g, H_g = sum_W diag(gamma) W^T W diag(gamma).
std::vector<double> reference_hessian(int64_t n, const std::vector<EmbeddingReaderGroup>& groups,
                                      double identity) {
  std::vector<double> h(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) h[static_cast<size_t>(i * n + i)] = identity;
  for (const EmbeddingReaderGroup& g : groups) {
    std::vector<double> hg(static_cast<size_t>(n * n), 0.0);
    for (size_t m = 0; m < g.mats.size(); ++m)
      for (int64_t r = 0; r < g.rows[m]; ++r)
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < n; ++j) {
            const double gi = g.gamma.empty() ? 1.0 : g.gamma[static_cast<size_t>(i)];
            const double gj = g.gamma.empty() ? 1.0 : g.gamma[static_cast<size_t>(j)];
            hg[static_cast<size_t>(i * n + j)] += gi * g.mats[m][r * n + i] * gj * g.mats[m][r * n + j];
          }
    double tr = 0;
    for (int64_t i = 0; i < n; ++i) tr += hg[static_cast<size_t>(i * n + i)];
    if (g.weight == 0 || g.mats.empty() || tr <= 0) continue;
    for (size_t k = 0; k < h.size(); ++k) h[k] += g.weight * double(n) / tr * hg[k];
  }
  return h;
}

// sum over rows of (w - v)^T H (w - v), v the rows of q decoded by the scalar dequantizer.
double readers_error(TensorType t, const std::vector<float>& w, int64_t rows, int64_t n, const uint8_t* q,
                     const std::vector<double>& h) {
  double s = 0;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row(t, q + static_cast<size_t>(r) * row_bytes(t, n), v.data(), n);
    std::vector<double> d(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      d[static_cast<size_t>(i)] = double(w[r * n + i]) - v[static_cast<size_t>(i)];
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        s += d[static_cast<size_t>(i)] * h[static_cast<size_t>(i * n + j)] * d[static_cast<size_t>(j)];
  }
  return s;
}

struct Readers {
  std::vector<std::vector<float>> mats;
  std::vector<EmbeddingReaderGroup> groups;
};

// Two groups like a layer's q/k/v (square-ish, so W^T W is far from the identity) and its gate/up.
Readers make_readers(int64_t n, std::mt19937& rng) {
  Readers R;
  R.mats.push_back(randn(static_cast<size_t>(n * n), rng, 0.02f));
  R.mats.push_back(randn(static_cast<size_t>(n / 2 * n), rng, 0.02f));
  R.mats.push_back(randn(static_cast<size_t>(3 * n * n), rng, 0.02f));
  EmbeddingReaderGroup a, f;
  a.weight = 1.0;
  a.gamma = randn(static_cast<size_t>(n), rng, 1.0f);
  a.mats = {R.mats[0].data(), R.mats[1].data()};
  a.rows = {n, n / 2};
  f.weight = 0.25;
  f.mats = {R.mats[2].data()};
  f.rows = {3 * n};
  R.groups = {a, f};
  return R;
}

TEST(EmbeddingHessian, MatchesTheFloat64SumOfNormalisedReaderGroups) {
  for (const int64_t n : {int64_t{32}, int64_t{48}, int64_t{70}}) {
    SCOPED_TRACE(n);
    std::mt19937 rng(static_cast<uint32_t>(n));
    const Readers R = make_readers(n, rng);
    for (const double identity : {0.0, 0.5}) {
      ThreadPool pool(2);
      const std::vector<float> h = embedding_hessian(n, R.groups, identity, &pool);
      const std::vector<double> ref = reference_hessian(n, R.groups, identity);
      ASSERT_EQ(h.size(), ref.size());
      double mean_diag = 0;
      for (int64_t i = 0; i < n; ++i) mean_diag += ref[static_cast<size_t>(i * n + i)] / double(n);
      EXPECT_NEAR(mean_diag, identity + 1.25, 1e-9);  // each group normalised to a mean diagonal of 1
      for (size_t k = 0; k < h.size(); ++k) ASSERT_NEAR(h[k], ref[k], 1e-5 * (1 + std::fabs(ref[k]))) << k;
    }
  }
}

TEST(EmbeddingHessian, NoGroupsIsTheIdentityTimesItsWeight) {
  const std::vector<float> h = embedding_hessian(5, {}, 2.0, nullptr);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 5; ++j) EXPECT_EQ(h[static_cast<size_t>(i * 5 + j)], i == j ? 2.0f : 0.0f);
}

TEST(EmbeddingHessian, GptqUnderItLowersTheReadersErrorBelowRoundToNearest) {
  struct Case {
    TensorType type;
    int64_t n;
  };
  for (const Case c : {Case{TensorType::Q4_0, 64}, Case{TensorType::Q4_0, 96}, Case{TensorType::Q4_K, 256},
                       Case{TensorType::Q5_0, 64}}) {
    SCOPED_TRACE(type_name(c.type));
    std::mt19937 rng(7 + static_cast<uint32_t>(c.n));
    const Readers R = make_readers(c.n, rng);
    const double identity = 1.0;
    const std::vector<float> h = embedding_hessian(c.n, R.groups, identity, nullptr);
    const std::vector<double> ref = reference_hessian(c.n, R.groups, identity);
    const int64_t rows = 24;
    const std::vector<float> emb = randn(static_cast<size_t>(rows * c.n), rng, 0.02f);
    const size_t rb = row_bytes(c.type, c.n);
    std::vector<uint8_t> rtn(rb * rows), gq(rb * rows);
    quantize_rows(c.type, emb.data(), rtn.data(), rows, c.n, nullptr, nullptr);
    ThreadPool pool(2);
    GptqOptions o;
    const double damp = gptq_quantize(c.type, emb.data(), rows, c.n, h.data(), o, gq.data(), &pool);
    if (has_refittable_scales(c.type))
      refit_block_scales(c.type, emb.data(), rows, c.n, h.data(), damp, gq.data(), &pool);
    const double e_rtn = readers_error(c.type, emb, rows, c.n, rtn.data(), ref);
    const double e_gptq = readers_error(c.type, emb, rows, c.n, gq.data(), ref);
    EXPECT_LT(e_gptq, 0.97 * e_rtn) << e_gptq << " vs " << e_rtn;
    // Every row still decodes (the plain squared error may rise: GPTQ moves the error where the
    // readers look least).
    std::vector<float> v(static_cast<size_t>(c.n));
    for (int64_t r = 0; r < rows; ++r) {
      dequantize_row(c.type, gq.data() + r * rb, v.data(), c.n);
      for (int64_t i = 0; i < c.n; ++i) ASSERT_TRUE(std::isfinite(v[static_cast<size_t>(i)]));
    }
  }
}

std::vector<float> tensor_f32(const ModelFile& f, const std::string& name) {
  const TensorInfo* t = f.find_tensor(name);
  EXPECT_NE(t, nullptr) << name;
  if (!t) return {};
  std::vector<float> v(static_cast<size_t>(t->n_elements()));
  const int64_t n = t->ne[0];
  for (int64_t r = 0; r < t->n_elements() / n; ++r)
    dequantize_row(t->type,
                   static_cast<const uint8_t*>(t->data) + static_cast<size_t>(r) * row_bytes(t->type, n),
                   v.data() + r * n, n);
  return v;
}

std::vector<uint8_t> tensor_bytes(const std::string& path, const std::string& name) {
  const auto f = open_model_file(path);
  const TensorInfo* t = f->find_tensor(name);
  EXPECT_NE(t, nullptr) << name;
  if (!t) return {};
  EXPECT_EQ(t->type, TensorType::Q4_0);
  const auto* p = static_cast<const uint8_t*>(t->data);
  return {p, p + t->nbytes};
}

TEST(EmbeddingHessian, QuantizeJobRoundsTheUntiedEmbeddingUnderItsReaders) {
  SynthPreset p = find_synth_preset("synth-tiny");
  p.n_embd = 64;
  p.n_layer = 2;
  p.n_head = 2;
  p.n_head_kv = 1;
  p.n_ff = 128;
  p.n_vocab = 300;
  p.n_ctx = 256;
  const std::string dir = ::testing::TempDir();
  const std::string src = dir + "/embd-synth.gguf";
  SynthOptions so;
  so.type = TensorType::F32;
  so.n_threads = 1;
  write_synthetic_model(p, so, src, {});

  auto run = [&](Method m, const QuantizeJobOptions::EmbeddingReaders& r, const std::string& out) {
    QuantizeJobOptions o;
    o.input = src;
    o.output = out;
    o.plan.preset = find_file_type("Q4_0");
    o.plan.pure = true;
    o.method = m;
    o.calib_text = "Once upon a time there was a little girl who liked to play in the park with her dog. ";
    for (int i = 0; i < 3; ++i) o.calib_text += o.calib_text;
    o.calib_name = "test";
    o.calib_ctx = 64;
    o.embd = r;
    o.threads = 2;
    run_quantize_job(o);
    return tensor_bytes(out, "token_embd.weight");
  };
  const QuantizeJobOptions::EmbeddingReaders none{0, 0, 0, 0, 0}, d{0, 1, 0, 1, 1};
  const std::vector<uint8_t> by_readers = run(Method::Gptq, d, dir + "/embd-gptq.gguf");
  const std::vector<uint8_t> off = run(Method::Gptq, {}, dir + "/embd-off.gguf");
  const std::vector<uint8_t> rtn_job = run(Method::Rtn, d, dir + "/embd-rtn.gguf");

  const auto f = open_model_file(src);
  const std::vector<float> emb = tensor_f32(*f, "token_embd.weight");
  const int64_t n = p.n_embd, rows = p.n_vocab;
  std::vector<uint8_t> rtn(row_bytes(TensorType::Q4_0, n) * static_cast<size_t>(rows));
  quantize_rows(TensorType::Q4_0, emb.data(), rtn.data(), rows, n, nullptr, nullptr);
  EXPECT_EQ(off, rtn);  // the default: off
  EXPECT_EQ(run(Method::Gptq, none, dir + "/embd-off.gguf"), rtn);
  EXPECT_EQ(rtn_job, rtn);
  ASSERT_EQ(by_readers.size(), rtn.size());
  EXPECT_NE(by_readers, rtn);

  // The readers asked for: layer 0's gate/up behind its ffn_norm, the output matrix behind
  // output_norm, each to a mean diagonal of 1, plus the identity.
  const std::vector<float> gate = tensor_f32(*f, "blk.0.ffn_gate.weight"),
                           up = tensor_f32(*f, "blk.0.ffn_up.weight");
  const std::vector<float> out = tensor_f32(*f, "output.weight");
  EmbeddingReaderGroup ffn0, output;
  ffn0.weight = d.ffn0;
  ffn0.gamma = tensor_f32(*f, "blk.0.ffn_norm.weight");
  ffn0.mats = {gate.data(), up.data()};
  ffn0.rows = {p.n_ff, p.n_ff};
  output.weight = d.output;
  output.gamma = tensor_f32(*f, "output_norm.weight");
  output.mats = {out.data()};
  output.rows = {p.n_vocab};
  const std::vector<double> h = reference_hessian(n, {ffn0, output}, d.identity);
  const double e_rtn = readers_error(TensorType::Q4_0, emb, rows, n, rtn.data(), h);
  const double e_job = readers_error(TensorType::Q4_0, emb, rows, n, by_readers.data(), h);
  EXPECT_LT(e_job, 0.99 * e_rtn) << e_job << " vs " << e_rtn;
  for (const char* name : {"embd-synth", "embd-gptq", "embd-off", "embd-rtn"})
    std::filesystem::remove(dir + "/" + name + ".gguf");
}

}  // namespace
}  // namespace strata::calib
