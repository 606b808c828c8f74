// SmoothQuant folds and static W8A8 activation ranges (smoothquant.h).
#include "calib/smoothquant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "core/check.h"
#include "model/w8a8_plan.h"
#include "quant/quantize.h"

namespace strata::calib {
namespace {

// The source's tensors, with replacements (F32 copies) owned by this file.
class SmoothedModelFile final : public ModelFile {
 public:
  explicit SmoothedModelFile(std::unique_ptr<ModelFile> source) : source_(std::move(source)) {
    format_ = source_->format();
    path_ = source_->path();
    metadata_ = source_->metadata();
    tensors_ = source_->tensors();
  }
  // The tensor as f32 values, [n_elements].
  std::vector<float> values(const std::string& name) const {
    const TensorInfo& t = tensor(name);
    std::vector<float> v(static_cast<size_t>(t.n_elements()));
    const int64_t n = t.ne[0], rows = t.n_elements() / n;
    const size_t stride = row_bytes(t.type, n);
    for (int64_t r = 0; r < rows; ++r)
      dequantize_row(t.type, static_cast<const uint8_t*>(t.data) + stride * static_cast<size_t>(r),
                     v.data() + r * n, n);
    return v;
  }
  void replace(const std::string& name, const std::vector<float>& v) {
    TensorInfo& t = mutable_tensor(name);
    STRATA_CHECK(static_cast<int64_t>(v.size()) == t.n_elements());
    uint8_t* dst = own_buffer(v.size() * sizeof(float));
    std::memcpy(dst, v.data(), v.size() * sizeof(float));
    t.type = TensorType::F32;
    t.data = dst;
    t.nbytes = v.size() * sizeof(float);
    t.file_offset = 0;
    replaced_.insert(name);
  }
  const TensorInfo& tensor(const std::string& name) const {
    const TensorInfo* t = find_tensor(name);
    if (!t) STRATA_THROW("SmoothQuant: model has no tensor '", name, "'");
    return *t;
  }
  void drop_tensor_pages(const TensorInfo& t) const override {
    if (!replaced_.count(t.name)) source_->drop_tensor_pages(t);
  }
  void populate_tensor_pages(const TensorInfo& t) const override {
    if (!replaced_.count(t.name)) source_->populate_tensor_pages(t);
  }

 private:
  TensorInfo& mutable_tensor(const std::string& name) {
    for (TensorInfo& t : tensors_)
      if (t.name == name) return t;
    STRATA_THROW("SmoothQuant: model has no tensor '", name, "'");
  }
  std::unique_ptr<ModelFile> source_;
  std::set<std::string> replaced_;
};

const std::vector<float>& column_absmax(const StatsMap& stats, const std::string& name, int64_t n_in) {
  const auto it = stats.find(name);
  if (it == stats.end()) STRATA_THROW("W8A8: the calibration statistics have no entry for '", name, "'");
  const TensorStats& s = it->second;
  if (s.abs_max.empty())
    STRATA_THROW("W8A8: the calibration statistics of '", name,
                 "' have no per-column max |x| (in_abs_max; collect them with `strata calibrate`)");
  if (s.n_mat != 1 || s.n_in != n_in)
    STRATA_THROW("W8A8: statistics of '", name, "' are for ", s.n_mat, " x ", s.n_in,
                 " inputs, the tensor has ", n_in);
  return s.abs_max;
}

struct Fold {
  std::string norm;
  std::vector<std::string> mats;
};

// The folds of layer `il` whose tensors are all present.
std::vector<Fold> layer_folds(const ModelFile& f, int64_t il) {
  const std::string p = "blk." + std::to_string(il) + ".";
  const auto has = [&](const std::string& n) { return f.find_tensor(p + n) != nullptr; };
  std::vector<Fold> out;
  const auto add = [&](const std::string& norm, std::vector<std::string> mats) {
    if (!has(norm)) return;
    for (const auto& m : mats)
      if (!has(m)) return;
    Fold fold{p + norm, {}};
    for (const auto& m : mats) fold.mats.push_back(p + m);
    out.push_back(std::move(fold));
  };
  if (has("attn_qkv.weight"))
    add("attn_norm.weight", {"attn_qkv.weight"});
  else
    add("attn_norm.weight", {"attn_q.weight", "attn_k.weight", "attn_v.weight"});
  if (has("ffn_gate.weight"))
    add("ffn_norm.weight", {"ffn_gate.weight", "ffn_up.weight"});
  else
    add("ffn_norm.weight", {"ffn_up.weight"});
  return out;
}

// Applies one fold; returns s.
std::vector<float> apply_fold(SmoothedModelFile& f, const Fold& fold, const StatsMap& stats, float alpha) {
  const TensorInfo& norm = f.tensor(fold.norm);
  const int64_t n = norm.ne[0];
  if (norm.n_elements() != n) STRATA_THROW("SmoothQuant: '", fold.norm, "' is not a vector");
  std::vector<float> w_absmax(static_cast<size_t>(n), 0.0f);
  std::vector<std::vector<float>> mats;
  for (const std::string& m : fold.mats) {
    const TensorInfo& t = f.tensor(m);
    if (t.ne[0] != n || t.ne[2] != 1 || t.ne[3] != 1)
      STRATA_THROW("SmoothQuant: '", m, "' does not read the ", n, " outputs of '", fold.norm, "'");
    mats.push_back(f.values(m));
    const std::vector<float>& w = mats.back();
    for (size_t i = 0; i < w.size(); ++i) w_absmax[i % n] = std::max(w_absmax[i % n], std::fabs(w[i]));
  }
  const std::vector<float> s = smoothing_scales(column_absmax(stats, fold.mats[0], n), w_absmax, alpha);
  std::vector<float> g = f.values(fold.norm);
  for (int64_t j = 0; j < n; ++j) g[static_cast<size_t>(j)] /= s[static_cast<size_t>(j)];
  f.replace(fold.norm, g);
  for (size_t m = 0; m < mats.size(); ++m) {
    for (size_t i = 0; i < mats[m].size(); ++i) mats[m][i] *= s[i % n];
    f.replace(fold.mats[m], mats[m]);
  }
  return s;
}

}  // namespace

std::vector<float> smoothing_scales(const std::vector<float>& x_absmax, const std::vector<float>& w_absmax,
                                    float alpha) {
  STRATA_CHECK(x_absmax.size() == w_absmax.size());
  std::vector<float> s(x_absmax.size(), 1.0f);
  for (size_t j = 0; j < s.size(); ++j) {
    if (!(x_absmax[j] > 0.0f) || !(w_absmax[j] > 0.0f)) continue;
    const double v = std::pow(double{x_absmax[j]}, alpha) / std::pow(double{w_absmax[j]}, 1.0 - alpha);
    s[j] = static_cast<float>(std::clamp(v, 1e-5, 1e5));
  }
  return s;
}

W8A8Calibration calibrate_w8a8(std::unique_ptr<ModelFile> source, const StatsMap& stats,
                               std::optional<float> alpha) {
  if (alpha && !(*alpha >= 0.0f && *alpha <= 1.0f))
    STRATA_THROW("SmoothQuant alpha must be in [0, 1], got ", *alpha);
  W8A8Calibration out;
  auto f = std::make_unique<SmoothedModelFile>(std::move(source));
  // The smoothed inputs' per-channel max |x|: max|X_j| / s_j.
  std::map<std::string, std::vector<float>> smoothed;
  if (alpha) {
    const std::string arch = f->metadata().string_or("general.architecture", "");
    if (arch != "llama")
      STRATA_THROW("SmoothQuant folds into llama-family RMSNorm weights; this model is '", arch, "'");
    const int64_t n_layers = f->metadata().int_or(arch + ".block_count", 0);
    for (int64_t il = 0; il < n_layers; ++il)
      for (const Fold& fold : layer_folds(*f, il)) {
        const std::vector<float> s = apply_fold(*f, fold, stats, *alpha);
        float s_min = s[0], s_max = s[0];
        for (float v : s) s_min = std::min(s_min, v), s_max = std::max(s_max, v);
        for (const std::string& m : fold.mats) {
          std::vector<float> x = column_absmax(stats, m, static_cast<int64_t>(s.size()));
          for (size_t j = 0; j < x.size(); ++j) x[j] /= s[j];
          smoothed[m] = std::move(x);
        }
        out.log.push_back(fold.norm + " -> " + std::to_string(fold.mats.size()) + " matrices: s in [" +
                          std::to_string(s_min) + ", " + std::to_string(s_max) + "]");
      }
    if (out.log.empty()) STRATA_THROW("SmoothQuant: no attn_norm / ffn_norm folds found in the model");
  }
  for (const TensorInfo& t : f->tensors()) {
    if (!W8A8Plan::covers(t.name) || t.n_dims != 2 || !stats.count(t.name)) continue;
    const auto it = smoothed.find(t.name);
    const std::vector<float>& x = it != smoothed.end() ? it->second : column_absmax(stats, t.name, t.ne[0]);
    out.act_absmax[t.name] = *std::max_element(x.begin(), x.end());
  }
  out.file = std::move(f);
  return out;
}

}  // namespace strata::calib
