#include "calib/prune_job.h"

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "calib/overlay_model_file.h"
#include "calib/progress.h"
#include "calib/scale_refit.h"
#include "calib/stats_source.h"
#include "core/check.h"
#include "core/thread_pool.h"
#include "formats/gguf_writer.h"
#include "formats/model_file.h"
#include "quant/quantize.h"

namespace strata::calib {
namespace {

// "blk.12.ffn_up.weight" -> 12 and "ffn_up.weight"; -1 outside the layers.
int64_t layer_of(const std::string& name, std::string* suffix) {
  if (name.rfind("blk.", 0) != 0) return -1;
  size_t p = 4;
  int64_t layer = 0;
  while (p < name.size() && p < 13 && name[p] >= '0' && name[p] <= '9')
    layer = layer * 10 + (name[p++] - '0');
  if (p == 4 || p >= name.size() || name[p] != '.') return -1;
  if (suffix) *suffix = name.substr(p + 1);
  return layer;
}

bool is_float(TensorType t) {
  return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16;
}

std::string shape_of(const TensorInfo& t) {
  std::string s;
  for (int d = 0; d < t.n_dims; ++d) s += (d ? " x " : "") + std::to_string(t.ne[static_cast<size_t>(d)]);
  return s;
}

// The output bytes of one tensor: its own, or the source's when copied.
struct OutTensor {
  TensorType type = TensorType::F32;
  std::vector<uint8_t> data;
  const void* src = nullptr;
};

class PruneJob {
 public:
  explicit PruneJob(const PruneJobOptions& o)
      : o_(o), pool_(o.threads > 0 ? o.threads : default_thread_count()) {}
  PruneJobResult run();

 private:
  bool wants_gram() const { return o_.method == PruneMethod::SparseGpt; }
  bool sequential() const { return o_.sequential && stats_ && stats_->can_reload(); }
  void reload_pruned_prefix();
  void open_sources();
  std::vector<std::vector<size_t>> groups() const;
  TensorType stored_type(const TensorInfo& t) const;
  // One slice [n_out, n_in] pruned in place; returns how, counts zeros into *zeros. With `joint`
  // (rows of that type) the slice is quantized in the same pass into joint->data: *quantized.
  std::string prune_slice(const TensorInfo& t, int mat, float* w, int64_t* zeros, TensorType type,
                          uint8_t* joint, bool* quantized);
  void prune_tensor(size_t index);
  void write();

  const PruneJobOptions& o_;
  ThreadPool pool_;
  std::unique_ptr<ModelFile> src_;
  std::unique_ptr<StatsSource> stats_;
  std::vector<OutTensor> out_;
  PruneJobResult result_;
};

void PruneJob::open_sources() {
  src_ = open_model_file(o_.input, o_.tokenizer);
  for (const TensorInfo& t : src_->tensors())  // before any calibration pass
    if (is_prunable_tensor(t.name, t.n_dims)) check_pattern_fits(o_.pattern, t.ne[0], t.name);
  stats_ =
      StatsSource::open({o_.input, o_.tokenizer, o_.imatrix_path, o_.calib_text, o_.calib_name, o_.calib_ctx,
                         o_.calib_chunks, static_cast<int>(pool_.size()), wants_gram() ? "SparseGPT" : ""},
                        *src_);
  if (!stats_ && o_.method != PruneMethod::Magnitude)
    STRATA_THROW("method ", prune_method_name(o_.method),
                 " needs calibration data: give --calib-file TEXT or --imatrix FILE");
}

// The prunable tensors in groups whose Gram matrices fit calib_mem together (one calibration
// pass each); one group when no Gram matrices are collected from a text.
std::vector<std::vector<size_t>> PruneJob::groups() const {
  std::vector<std::vector<size_t>> g(1);
  const bool passes = stats_ && wants_gram() && o_.imatrix_path.empty();
  const bool per_layer = sequential() && o_.method != PruneMethod::Magnitude;
  std::map<int64_t, std::vector<size_t>> by_layer;
  const auto& ts = src_->tensors();
  for (size_t i = 0; i < ts.size(); ++i)
    if (is_prunable_tensor(ts[i].name, ts[i].n_dims)) by_layer[layer_of(ts[i].name, nullptr)].push_back(i);
  size_t used = 0;
  for (const auto& [layer, idx] : by_layer) {
    size_t bytes = 0;  // an upper estimate: shared inputs counted once per matrix
    for (size_t i : idx)
      bytes += static_cast<size_t>(ts[i].ne[0] * ts[i].ne[0]) * sizeof(float) *
               static_cast<size_t>(ts[i].ne[2] * ts[i].ne[3]);
    if ((per_layer && !g.back().empty()) || (passes && used > 0 && used + bytes > o_.calib_mem)) {
      g.emplace_back();
      used = 0;
    }
    g.back().insert(g.back().end(), idx.begin(), idx.end());
    used += bytes;
  }
  return g;
}

TensorType PruneJob::stored_type(const TensorInfo& t) const {
  if (o_.type) return fallback_type(*o_.type, t.ne[0]);
  if (is_float(t.type)) return t.type;
  return TensorType::F32;
}

std::string PruneJob::prune_slice(const TensorInfo& t, int mat, float* w, int64_t* zeros, TensorType type,
                                  uint8_t* joint, bool* quantized) {
  const int64_t n_in = t.ne[0], n_out = t.ne[1];
  std::vector<uint8_t> mask(static_cast<size_t>(n_in * n_out));
  std::optional<InputStats> in;
  if (stats_ && o_.method != PruneMethod::Magnitude) {
    in = stats_->input_stats(t.name, mat, wants_gram());
    if (in && in->n != n_in) in.reset();
  }
  std::string how;
  *quantized = false;
  if (o_.method == PruneMethod::SparseGpt && in && in->has_gram() && joint) {
    const std::vector<float> dense(w, w + n_in * n_out);
    const double damp = sparsegpt_prune_quantize(type, w, n_out, n_in, in->gram.data(), o_.pattern,
                                                 o_.sparsegpt, mask.data(), joint, &pool_);
    how = "sparsegpt+" + std::string(type_name(type));
    if (has_refittable_scales(type)) {  // levels fixed, so the zeros stay zeros
      refit_block_scales(type, dense.data(), n_out, n_in, in->gram.data(), damp, joint, &pool_);
      how += "+refit";
    }
    *quantized = true;
  } else if (o_.method == PruneMethod::SparseGpt && in && in->has_gram()) {
    sparsegpt_prune(w, n_out, n_in, in->gram.data(), o_.pattern, o_.sparsegpt, mask.data(), &pool_);
    how = "sparsegpt";
  } else if (o_.method != PruneMethod::Magnitude && in) {
    std::vector<float> norm(static_cast<size_t>(n_in));
    for (int64_t j = 0; j < n_in; ++j) norm[static_cast<size_t>(j)] = std::sqrt(std::max(0.0f, in->msq[j]));
    prune_by_score(w, n_out, n_in, norm.data(), o_.pattern, mask.data());
    how = o_.method == PruneMethod::Wanda ? "wanda" : "wanda (no Gram matrix)";
  } else {
    prune_by_score(w, n_out, n_in, nullptr, o_.pattern, mask.data());
    how = o_.method == PruneMethod::Magnitude ? "magnitude" : "magnitude (no statistics)";
  }
  for (uint8_t m : mask) *zeros += m;
  return how;
}

void PruneJob::prune_tensor(size_t index) {
  const TensorInfo& t = src_->tensors()[index];
  const int64_t n_in = t.ne[0], n_out = t.ne[1], n_mat = t.ne[2] * t.ne[3];
  check_pattern_fits(o_.pattern, n_in, t.name);
  PrunedTensor rep;
  rep.name = t.name;
  rep.shape = shape_of(t);
  rep.type = stored_type(t);
  rep.elements = t.n_elements();
  OutTensor& o = out_[index];
  o.type = rep.type;
  const size_t in_row = row_bytes(t.type, n_in), out_row = row_bytes(rep.type, n_in);
  o.data.resize(out_row * static_cast<size_t>(n_out * n_mat));
  std::vector<float> w(static_cast<size_t>(n_in * n_out));  // [n_out, n_in] one slice
  std::set<std::string> hows;                               // of the slices so far
  const bool joint = o_.type && o_.joint_quant && o_.method == PruneMethod::SparseGpt &&
                     sparsegpt_can_quantize(rep.type) && n_in % type_traits(rep.type).block_size == 0;
  for (int64_t e = 0; e < n_mat; ++e) {
    const auto* src = static_cast<const uint8_t*>(t.data) + static_cast<size_t>(e * n_out) * in_row;
    for (int64_t r = 0; r < n_out; ++r)
      dequantize_row(t.type, src + static_cast<size_t>(r) * in_row, w.data() + r * n_in, n_in);
    uint8_t* slice_out = o.data.data() + static_cast<size_t>(e * n_out) * out_row;
    bool quantized = false;
    const std::string how = prune_slice(t, static_cast<int>(e), w.data(), &rep.zeros, rep.type,
                                        joint ? slice_out : nullptr, &quantized);
    if (hows.insert(how).second) rep.how += (rep.how.empty() ? "" : ", ") + how;  // distinct, in order
    if (quantized) continue;
    std::optional<InputStats> in;
    if (stats_ && !is_float(rep.type)) in = stats_->input_stats(t.name, static_cast<int>(e), false);
    const float* imp = in && in->n == n_in ? in->msq.data() : nullptr;
    quantize_rows(rep.type, w.data(), slice_out, n_out, n_in, imp, &pool_);
  }
  if (o_.type && rep.type != *o_.type)
    result_.notes.push_back(t.name + ": rows of " + std::to_string(n_in) + " do not fit " +
                            std::string(type_name(*o_.type)) + " blocks, stored as " +
                            std::string(type_name(rep.type)));
  result_.tensors.push_back(std::move(rep));
}

void PruneJob::reload_pruned_prefix() {
  std::map<std::string, TensorOverride> over;
  for (size_t i = 0; i < out_.size(); ++i)
    if (!out_[i].src)
      over[src_->tensors()[i].name] = TensorOverride{out_[i].type, out_[i].data.data(), out_[i].data.size()};
  stats_->reload(overlay_model_file(*src_, over));
}

void PruneJob::write() {
  GgufWriter w;
  w.set_metadata(src_->metadata());
  Metadata& md = w.metadata();
  md.set("strata.prune.method", GgufValue::of_string(prune_method_name(o_.method)));
  md.set("strata.prune.pattern", GgufValue::of_string(o_.pattern.describe()));
  if (stats_)
    md.set("strata.prune.calibration",
           GgufValue::of_string(o_.imatrix_path.empty() ? o_.calib_name : o_.imatrix_path));
  for (size_t i = 0; i < src_->tensors().size(); ++i) {
    const TensorInfo& t = src_->tensors()[i];
    const OutTensor& o = out_[i];
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + std::max(1, t.n_dims));
    w.add_tensor(t.name, o.type, ne, o.src ? o.src : o.data.data());
    result_.in_bytes += t.nbytes;
    result_.out_bytes += o.src ? t.nbytes : o.data.size();
  }
  w.write(o_.output);
}

PruneJobResult PruneJob::run() {
  if (o_.type && (!is_storage_type(*o_.type) || !can_quantize(*o_.type)))
    STRATA_THROW("cannot store pruned matrices as ", type_name(*o_.type));
  if (o_.type && quantize_requires_imatrix(*o_.type) && o_.imatrix_path.empty() && o_.calib_text.empty())
    STRATA_THROW(
        "cannot quantize to ", type_name(*o_.type),
        " without an importance matrix (--imatrix FILE or --calib-file TEXT), as llama.cpp requires");
  if (o_.type && o_.joint_quant && o_.method == PruneMethod::SparseGpt && !sparsegpt_can_quantize(*o_.type))
    result_.notes.push_back(std::string(type_name(*o_.type)) +
                            " blocks do not hold an exact 0: pruned, then rounded (pruned weights become "
                            "the level nearest 0)");
  open_sources();
  const auto& ts = src_->tensors();
  out_.resize(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    out_[i].type = ts[i].type;
    out_[i].src = ts[i].data;
  }
  const auto gs = groups();
  size_t total = 0;
  for (const auto& g : gs) total += g.size();
  if (total == 0) STRATA_THROW(o_.input, ": no linear layers to prune");
  int64_t done = 0;
  for (size_t k = 0; k < gs.size(); ++k) {
    const auto& g = gs[k];
    if (stats_) {
      if (k > 0 && sequential()) reload_pruned_prefix();
      std::set<std::string> grams;
      if (wants_gram())
        for (size_t i : g) grams.insert(ts[i].name);
      stats_->prepare(grams);
    }
    Progress progress("prune", static_cast<int64_t>(total));
    progress.update(done);
    for (size_t i : g) {
      out_[i].src = nullptr;
      prune_tensor(i);
      progress.update(++done, ts[i].name);
    }
  }
  result_.calibration_passes = stats_ ? stats_->passes : 0;
  write();
  return std::move(result_);
}

}  // namespace

bool is_prunable_tensor(const std::string& name, int n_dims) {
  std::string suffix;
  if (n_dims < 2 || layer_of(name, &suffix) < 0 || !suffix.ends_with(".weight")) return false;
  if (!suffix.starts_with("attn_") && !suffix.starts_with("ffn_")) return false;
  return suffix.find("norm") == std::string::npos && suffix.find("gate_inp") == std::string::npos;
}

PruneJobResult run_prune_job(const PruneJobOptions& options) {
  PruneJob job(options);
  return job.run();
}

}  // namespace strata::calib
