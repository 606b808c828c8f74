#include "calib/quantize_job.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "calib/embedding_hessian.h"
#include "calib/layer_folds.h"
#include "calib/overlay_model_file.h"
#include "calib/progress.h"
#include "calib/stats_source.h"
#include "core/check.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "formats/gguf_writer.h"
#include "formats/model_file.h"
#include "model/model_config.h"
#include "quant/block_grid.h"
#include "quant/quantize.h"

namespace strata::calib {
namespace {

// A tensor of the output file: its own bytes, or the source's when copied unchanged.
struct OutTensor {
  TensorType type = TensorType::F32;
  std::vector<uint8_t> data;
  const void* src = nullptr;
  size_t nbytes = 0;
};

std::string shape_of(const TensorInfo& t) {
  std::string s;
  for (int d = 0; d < t.n_dims; ++d) s += (d ? " x " : "") + std::to_string(t.ne[static_cast<size_t>(d)]);
  return s;
}

// "blk.12.attn_q.weight" -> 12 and "attn_q.weight"; -1 outside the layers.
int64_t layer_of(const std::string& name, std::string* suffix) {
  if (name.rfind("blk.", 0) != 0) return -1;
  size_t p = 4;
  int64_t layer = 0;
  const size_t start = p;
  while (p < name.size() && std::isdigit(static_cast<unsigned char>(name[p])) && p - start < 9)
    layer = layer * 10 + (name[p++] - '0');
  if (p == start || p >= name.size() || name[p] != '.') return -1;
  if (suffix) *suffix = name.substr(p + 1);
  return layer;
}

std::vector<float> dequantized(const TensorInfo& t) {
  std::vector<float> v(static_cast<size_t>(t.n_elements()));
  const int64_t row = t.ne[0];
  const int64_t rows = row == 0 ? 0 : t.n_elements() / row;
  const size_t rb = row_bytes(t.type, row);
  for (int64_t r = 0; r < rows; ++r)
    dequantize_row(t.type, static_cast<const uint8_t*>(t.data) + static_cast<size_t>(r) * rb,
                   v.data() + r * row, row);
  return v;
}

OutTensor f32_tensor(const std::vector<float>& v) {
  OutTensor o;
  o.type = TensorType::F32;
  o.data.resize(v.size() * sizeof(float));
  std::memcpy(o.data.data(), v.data(), o.data.size());
  return o;
}

// Stores floats [rows, n] as `type` (a float type or a plain conversion).
OutTensor converted(TensorType type, const std::vector<float>& v, int64_t n, ThreadPool* pool) {
  OutTensor o;
  o.type = type;
  const int64_t rows = n == 0 ? 0 : static_cast<int64_t>(v.size()) / n;
  o.data.resize(row_bytes(type, n) * static_cast<size_t>(rows));
  quantize_rows(type, v.data(), o.data.data(), rows, n, nullptr, pool);
  return o;
}

class Job {
 public:
  explicit Job(const QuantizeJobOptions& o)
      : o_(o), pool_(o.threads > 0 ? o.threads : default_thread_count()) {}

  QuantizeJobResult run();

 private:
  bool wants_gram() const { return uses_gptq(o_.method) || uses_awq(o_.method); }
  void open_sources();
  std::vector<std::vector<int64_t>> layer_groups() const;
  std::set<std::string> gram_tensors(const std::vector<int64_t>& layers, bool tail) const;
  MatrixJob make_job(const TensorInfo& t, TensorType type, int mat, const float* w);
  void process_layer(int64_t layer);
  void process_matrix(size_t index);  // outside the layers, or not part of a fold
  void record(size_t index, OutTensor out, MatrixReport rep);
  void write();
  void reload_quantized_prefix();
  bool embedding_by_gptq(const TensorInfo& t, TensorType type) const;
  InputStats embedding_stats(int64_t n_embd);
  bool tied_embeddings() const { return src_->find_tensor("output.weight") == nullptr; }

  const QuantizeJobOptions& o_;
  ThreadPool pool_;
  std::unique_ptr<ModelFile> src_;
  std::unique_ptr<StatsSource> stats_;
  std::vector<TensorPlan> plan_;
  std::map<int64_t, std::vector<size_t>> layers_;  // layer -> tensor indices
  std::vector<size_t> others_;
  std::vector<OutTensor> out_;
  std::vector<bool> done_;
  QuantizeJobResult result_;
  FoldShape shape_;
  std::unique_ptr<Progress> progress_;
  int64_t n_done_ = 0;
};

void Job::open_sources() {
  src_ = open_model_file(o_.input, o_.tokenizer);
  stats_ =
      StatsSource::open({o_.input, o_.tokenizer, o_.imatrix_path, o_.calib_text, o_.calib_name, o_.calib_ctx,
                         o_.calib_chunks, static_cast<int>(pool_.size()), uses_gptq(o_.method) ? "GPTQ" : ""},
                        *src_);
  if (!stats_ && o_.method != Method::Rtn)
    STRATA_THROW("method ", method_name(o_.method),
                 " needs calibration data: give --calib-file TEXT or --imatrix FILE");
  try {
    const ModelConfig c = ModelConfig::from_metadata(src_->metadata());
    shape_ = FoldShape{c.n_head, c.n_head_kv, c.head_dim};
  } catch (const Error&) {
    shape_ = FoldShape{};  // an architecture Strata does not run: no v -> o fold
  }
}

std::vector<std::vector<int64_t>> Job::layer_groups() const {
  std::vector<std::vector<int64_t>> groups(1);
  const bool passes = stats_ && wants_gram() && o_.imatrix_path.empty();  // a text source re-runs
  if (passes && o_.sequential) {
    groups.clear();
    for (const auto& [layer, idx] : layers_) groups.push_back({layer});
    return groups;
  }
  size_t used = 0;
  for (const auto& [layer, idx] : layers_) {
    // Distinct inputs: one Gram matrix per input width class of the layer (q/k/v and gate/up
    // share theirs); an upper estimate is fine here.
    size_t bytes = 0;
    std::set<std::string> seen;
    for (size_t i : idx) {
      const TensorInfo& t = src_->tensors()[i];
      std::string suffix;
      layer_of(t.name, &suffix);
      if (!plan_[i].quantized || t.n_dims < 2) continue;
      if (suffix == "attn_k.weight" || suffix == "attn_v.weight" || suffix == "ffn_up.weight") continue;
      bytes += static_cast<size_t>(t.ne[0] * t.ne[0]) * sizeof(float) * static_cast<size_t>(t.ne[2]);
    }
    if (passes && used > 0 && used + bytes > o_.calib_mem) {
      groups.emplace_back();
      used = 0;
    }
    groups.back().push_back(layer);
    used += bytes;
  }
  return groups;
}

std::set<std::string> Job::gram_tensors(const std::vector<int64_t>& layers, bool tail) const {
  std::set<std::string> s;
  for (int64_t l : layers)
    for (size_t i : layers_.at(l))
      if (plan_[i].quantized) s.insert(src_->tensors()[i].name);
  if (tail)
    for (size_t i : others_)
      if (plan_[i].quantized) s.insert(src_->tensors()[i].name);
  return s;
}

MatrixJob Job::make_job(const TensorInfo& t, TensorType type, int mat, const float* w) {
  MatrixJob j;
  j.m.name = t.name;
  j.m.n_in = t.ne[0];
  j.m.n_out = t.ne[1];
  j.m.type = type;
  j.m.w.assign(w, w + j.m.n_in * j.m.n_out);
  j.original = j.m.w;
  if (stats_) {
    j.in = stats_->input_stats(t.name, mat, wants_gram());
    if (j.in && j.in->n != j.m.n_in) {
      result_.notes.push_back("statistics of " + t.name + " have " + std::to_string(j.in->n) +
                              " columns, the matrix " + std::to_string(j.m.n_in) + ": ignored");
      j.in.reset();
    }
    j.in_orig = j.in;
  }
  return j;
}

void Job::record(size_t index, OutTensor out, MatrixReport rep) {
  const TensorInfo& t = src_->tensors()[index];
  TensorReport r;
  r.name = t.name;
  r.shape = shape_of(t);
  r.from = t.type;
  r.to = out.type;
  r.fell_back = plan_[index].fell_back;
  r.wanted = plan_[index].wanted;
  r.q = std::move(rep);
  result_.tensors.push_back(std::move(r));
  out_[index] = std::move(out);
  done_[index] = true;
  ++n_done_;
  if (progress_) progress_->update(n_done_, t.name);
}

void Job::process_matrix(size_t index) {
  const TensorInfo& t = src_->tensors()[index];
  const TensorPlan& p = plan_[index];
  if (!p.quantized) {  // copied as it is, or made F32 (1-D)
    OutTensor o;
    if (p.type == t.type) {
      o.type = t.type;
      o.src = t.data;
      o.nbytes = t.nbytes;
    } else {
      o = converted(p.type, dequantized(t), t.ne[0], &pool_);
    }
    record(index, std::move(o), {});
    return;
  }
  const std::vector<float> w = dequantized(t);
  const int64_t n_mat = t.ne[2] * t.ne[3];
  const int64_t slice = t.ne[0] * t.ne[1];
  OutTensor o;
  o.type = p.type;
  const size_t slice_bytes = row_bytes(p.type, t.ne[0]) * static_cast<size_t>(t.ne[1]);
  o.data.resize(slice_bytes * static_cast<size_t>(n_mat));
  MatrixQuantOptions mq{o_.method, o_.clip, o_.gptq, o_.metric_rows};
  // A tied embedding is both the input lookup and the output matrix; GPTQ and AWQ only see the
  // output's inputs and move error into the rows the lookup reads (measured: GPTQ on the tied
  // embedding of tinystories656k alone raised the KLD 1.4x). It gets imatrix-weighted rounding.
  if (t.name == "token_embd.weight" && tied_embeddings()) mq.method = Method::Rtn;
  const bool embd = embedding_by_gptq(t, p.type);
  if (embd) mq.method = Method::Gptq;
  const InputStats embd_stats = embd ? embedding_stats(t.ne[0]) : InputStats{};  // one matrix: computed once
  MatrixReport rep;
  for (int64_t e = 0; e < n_mat; ++e) {
    MatrixJob j = make_job(t, p.type, static_cast<int>(e), w.data() + e * slice);
    if (embd) {
      j.in = embd_stats;
      j.in_orig = embd_stats;
    }
    MatrixReport r = quantize_matrix(j, mq, o.data.data() + static_cast<size_t>(e) * slice_bytes, &pool_);
    if (e == 0) rep = r;
  }
  record(index, std::move(o), std::move(rep));
}

bool Job::embedding_by_gptq(const TensorInfo& t, TensorType type) const {
  return t.name == "token_embd.weight" && !tied_embeddings() && o_.method != Method::Rtn && o_.embd.any() &&
         t.n_dims == 2 && type_traits(type).quantized && has_block_grid(type) &&
         t.ne[0] % type_traits(type).block_size == 0;
}

// The embedding's readers (embedding_hessian.h), from the source weights, each with its norm
// weight folded in.
InputStats Job::embedding_stats(int64_t n_embd) {
  std::vector<std::vector<float>> keep;  // the weights the groups point into (moves keep the buffers)
  auto add = [&](EmbeddingReaderGroup& g, const std::string& norm, const std::string& name) {
    const TensorInfo* t = src_->find_tensor(name);
    if (g.weight == 0 || !t || t->n_dims != 2 || t->ne[0] != n_embd) return;
    std::vector<float> w = dequantized(*t);
    const TensorInfo* gt = src_->find_tensor(norm);
    if (gt && gt->n_elements() == n_embd) {
      const std::vector<float> gamma = dequantized(*gt);
      for (size_t i = 0; i < w.size(); ++i) w[i] *= gamma[i % static_cast<size_t>(n_embd)];
    }
    keep.push_back(std::move(w));
    g.mats.push_back(keep.back().data());
    g.rows.push_back(t->ne[1]);
  };
  std::vector<EmbeddingReaderGroup> groups(4);
  groups[0].weight = o_.embd.attn;
  groups[1].weight = o_.embd.ffn0;
  groups[2].weight = o_.embd.ffn_later;  // every later layer together, scaled as one group
  groups[3].weight = o_.embd.output;
  for (const auto& [layer, idx] : layers_) {
    const std::string b = "blk." + std::to_string(layer) + ".";
    for (const char* m : {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_qkv.weight"})
      add(groups[0], b + "attn_norm.weight", b + m);
    for (const char* m : {"ffn_gate.weight", "ffn_up.weight"})
      add(groups[layer == 0 ? 1 : 2], b + "ffn_norm.weight", b + m);
  }
  add(groups[3], "output_norm.weight", "output.weight");
  InputStats s;
  s.n = n_embd;
  s.gram = embedding_hessian(n_embd, groups, o_.embd.identity, &pool_);
  s.msq.resize(static_cast<size_t>(n_embd));
  for (int64_t i = 0; i < n_embd; ++i)
    s.msq[static_cast<size_t>(i)] = s.gram[static_cast<size_t>(i * n_embd + i)];
  return s;
}

void Job::process_layer(int64_t layer) {
  LayerWork L;
  L.index = layer;
  std::map<std::string, size_t> index_of;
  for (size_t i : layers_.at(layer)) {
    const TensorInfo& t = src_->tensors()[i];
    std::string suffix;
    layer_of(t.name, &suffix);
    index_of[suffix] = i;
    if (plan_[i].quantized && t.n_dims == 2)
      L.mats.emplace(suffix, make_job(t, plan_[i].type, 0, dequantized(t).data()));
    else if (t.n_dims == 1)
      L.vecs.emplace(suffix, dequantized(t));
  }
  FoldLog log;
  if (uses_awq(o_.method)) log = apply_awq(L, shape_, o_.awq, &pool_);
  for (const std::string& line : log.lines)
    result_.notes.push_back("blk." + std::to_string(layer) + " " + line);

  MatrixQuantOptions mq{o_.method, o_.clip, o_.gptq, o_.metric_rows};
  for (auto& [suffix, job] : L.mats) {
    const size_t i = index_of.at(suffix);
    // AutoAWQ does not clip q and k: their errors pass through the softmax's normalisation.
    job.allow_clip = suffix != "attn_q.weight" && suffix != "attn_k.weight";
    OutTensor o;
    o.type = job.m.type;
    o.data.resize(row_bytes(job.m.type, job.m.n_in) * static_cast<size_t>(job.m.n_out));
    MatrixReport rep = quantize_matrix(job, mq, o.data.data(), &pool_);
    job.m.w.clear();
    job.m.w.shrink_to_fit();
    record(i, std::move(o), std::move(rep));
  }
  for (auto& [suffix, v] : L.vecs) {
    const size_t i = index_of.at(suffix);
    record(i,
           plan_[i].type == TensorType::F32 ? f32_tensor(v) : converted(plan_[i].type, v, v.size(), &pool_),
           {});
  }
  for (size_t i : layers_.at(layer))
    if (!done_[i]) process_matrix(i);
}

void Job::reload_quantized_prefix() {
  std::map<std::string, TensorOverride> over;
  for (size_t i = 0; i < out_.size(); ++i) {
    if (!done_[i] || out_[i].src) continue;
    over[src_->tensors()[i].name] = TensorOverride{out_[i].type, out_[i].data.data(), out_[i].data.size()};
  }
  stats_->reload(overlay_model_file(*src_, over));
}

void Job::write() {
  GgufWriter w;
  w.set_metadata(src_->metadata());
  Metadata& md = w.metadata();
  md.set("general.quantization_version", GgufValue::of_u32(2));
  md.set("general.file_type", GgufValue::of_u32(planned_file_type(*src_, o_.plan)));
  if (stats_) {
    // llama-quantize's keys.
    md.set("quantize.imatrix.file",
           GgufValue::of_string(o_.imatrix_path.empty() ? o_.calib_name : o_.imatrix_path));
    if (!stats_->datasets.empty())
      md.set("quantize.imatrix.dataset", GgufValue::of_string(stats_->datasets[0]));
    md.set("quantize.imatrix.entries_count",
           GgufValue::of_u32(static_cast<uint32_t>(stats_->stats().size())));
    if (stats_->chunk_count > 0)
      md.set("quantize.imatrix.chunks_count", GgufValue::of_u32(static_cast<uint32_t>(stats_->chunk_count)));
    md.set("strata.quantize.method", GgufValue::of_string(method_name(o_.method)));
  }
  for (size_t i = 0; i < src_->tensors().size(); ++i) {
    const TensorInfo& t = src_->tensors()[i];
    const OutTensor& o = out_[i];
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + std::max(1, t.n_dims));
    if (o.src)
      w.add_tensor(t.name, o.type, ne, o.src);
    else
      w.add_tensor(t.name, o.type, ne, o.data.data());
    result_.in_bytes += t.nbytes;
    result_.out_bytes += o.src ? o.nbytes : o.data.size();
  }
  w.write(o_.output);
}

QuantizeJobResult Job::run() {
  open_sources();
  PlanOptions po = o_.plan;
  po.has_imatrix = stats_ != nullptr;
  plan_ = plan_tensor_types(*src_, po);
  const auto& tensors = src_->tensors();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const int64_t l = layer_of(tensors[i].name, nullptr);
    if (l >= 0)
      layers_[l].push_back(i);
    else
      others_.push_back(i);
  }
  out_.resize(tensors.size());
  done_.assign(tensors.size(), false);
  const auto groups = layer_groups();
  progress_ = std::make_unique<Progress>("quantize", static_cast<int64_t>(tensors.size()));
  const bool sequential = o_.sequential && stats_ && stats_->can_reload() && wants_gram();
  for (size_t g = 0; g < groups.size(); ++g) {
    if (stats_) {
      progress_->finish();
      if (sequential && g > 0) reload_quantized_prefix();
      const bool tail = g + 1 == groups.size() && !sequential;
      stats_->prepare(wants_gram() ? gram_tensors(groups[g], tail) : std::set<std::string>{});
      progress_ = std::make_unique<Progress>("quantize", static_cast<int64_t>(tensors.size()));
      progress_->update(n_done_);
    }
    for (int64_t l : groups[g]) process_layer(l);
  }
  if (sequential) {  // the matrices outside the layers see the fully quantized layers
    progress_->finish();
    reload_quantized_prefix();
    stats_->prepare(gram_tensors({}, true));
    progress_ = std::make_unique<Progress>("quantize", static_cast<int64_t>(tensors.size()));
  }
  for (size_t i : others_) process_matrix(i);
  progress_->finish();
  result_.calibration_passes = stats_ ? stats_->passes : 0;
  write();
  return result_;
}

}  // namespace

QuantizeJobResult run_quantize_job(const QuantizeJobOptions& options) {
  Job job(options);
  return job.run();
}

std::string format_summary(const QuantizeJobResult& r) {
  std::string s;
  char line[256];
  std::snprintf(line, sizeof line, "%-28s %-13s %-7s %-28s %11s %11s %7s\n", "tensor", "shape", "type",
                "method", "err rtn", "err now", "ratio");
  s += line;
  double sum_before = 0, sum_after = 0;
  int n = 0;
  for (const TensorReport& t : r.tensors) {
    if (t.q.how.empty()) continue;
    char before[16] = "-", after[16] = "-", ratio[16] = "-";
    if (t.q.err_before >= 0) std::snprintf(before, sizeof before, "%.3e", t.q.err_before);
    if (t.q.err_after >= 0) std::snprintf(after, sizeof after, "%.3e", t.q.err_after);
    if (t.q.err_before > 0 && t.q.err_after >= 0) {
      std::snprintf(ratio, sizeof ratio, "%.3f", t.q.err_after / t.q.err_before);
      sum_before += t.q.err_before;
      sum_after += t.q.err_after;
      ++n;
    }
    std::snprintf(line, sizeof line, "%-28s %-13s %-7s %-28s %11s %11s %7s\n", t.name.c_str(),
                  t.shape.c_str(), std::string(type_name(t.to)).c_str(), t.q.how.c_str(), before, after,
                  ratio);
    s += line;
  }
  if (n > 0) {
    std::snprintf(line, sizeof line,
                  "mean relative output error over %d matrices: %.3e (rtn) -> %.3e (%.3fx)\n", n,
                  sum_before / n, sum_after / n, sum_after / sum_before);
    s += line;
  }
  return s;
}

}  // namespace strata::calib
