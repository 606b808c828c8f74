#include "calib/stats_source.h"

#include <cmath>

#include "calib/imatrix_file.h"
#include "calib/progress.h"
#include "core/check.h"
#include "core/log.h"

namespace strata::calib {

InputStats make_input_stats(const TensorStats& s, int mat, bool want_gram) {
  InputStats in;
  in.n = s.n_in;
  in.msq = s.importance(mat);
  in.mean_abs = s.mean_abs(mat);
  if (!s.abs_max.empty())
    in.abs_max.assign(s.abs_max.begin() + mat * s.n_in, s.abs_max.begin() + (mat + 1) * s.n_in);
  const GramMatrix* g = want_gram ? s.gram_of(mat) : nullptr;
  const double c = s.count[static_cast<size_t>(mat)];
  if (g && c > 0) {
    STRATA_CHECK(g->finalized && g->n == s.n_in);
    in.gram.resize(g->g.size());
    const double inv = 1.0 / c;
    for (size_t i = 0; i < g->g.size(); ++i) in.gram[i] = static_cast<float>(g->g[i] * inv);
  }
  return in;
}

StatsSource::~StatsSource() = default;

std::unique_ptr<StatsSource> StatsSource::from_file(const std::string& path) {
  std::unique_ptr<StatsSource> s(new StatsSource());
  CalibrationFile f = read_calibration_file(path);
  s->file_stats_ = std::move(f.stats);
  s->datasets = f.datasets;
  s->chunk_count = f.chunk_count;
  s->chunk_size = f.chunk_size;
  log_info("loaded ", s->file_stats_.size(), " importance matrix entries from ", path,
           f.legacy ? " (legacy format)" : "");
  return s;
}

std::unique_ptr<StatsSource> StatsSource::open(const Request& r, const ModelFile& model) {
  if (!r.imatrix_path.empty() && !r.calib_text.empty())
    STRATA_THROW("give either --imatrix or --calib-file, not both");
  std::unique_ptr<StatsSource> s;
  if (!r.imatrix_path.empty()) {
    s = from_file(r.imatrix_path);
    s->match_model(model);
  } else if (!r.calib_text.empty()) {
    s = from_text(r.model_path, r.tokenizer_path, r.calib_text, r.calib_name, r.calib_ctx, r.calib_chunks,
                  r.n_threads);
  }
  if (s && !r.gram_user.empty() && !s->can_collect_grams())
    STRATA_THROW(r.gram_user, " needs the inputs' Gram matrices, which ", r.imatrix_path,
                 " does not have: give --calib-file TEXT, or make the file with `strata calibrate --gram`");
  return s;
}

std::unique_ptr<StatsSource> StatsSource::from_text(const std::string& model_path,
                                                    const std::string& tokenizer_path,
                                                    const std::string& text, const std::string& dataset_name,
                                                    int64_t n_ctx, int64_t max_chunks, int n_threads) {
  std::unique_ptr<StatsSource> s(new StatsSource());
  s->from_text_ = true;
  s->cpu_ = make_cpu_backend(n_threads);
  s->recorder_ = std::make_unique<RecordingBackend>(*s->cpu_, s->cpu_->n_threads());
  ModelLoadOptions mo;
  mo.tokenizer_path = tokenizer_path;
  s->model_ = Model::load(model_path, *s->recorder_, mo);
  const int64_t ctx =
      std::min<int64_t>(n_ctx, s->model_->config().n_ctx_train > 0 ? s->model_->config().n_ctx_train : n_ctx);
  s->text_ = make_calibration_text(s->model_->tokenizer(), text, ctx, max_chunks);
  s->datasets = {dataset_name};
  s->chunk_count = static_cast<int64_t>(s->text_.chunks.size());
  s->chunk_size = s->text_.n_ctx;
  log_info("calibration: ", s->chunk_count, " chunks of ", s->chunk_size, " tokens (", s->text_.n_tokens(),
           " tokens)");
  return s;
}

void StatsSource::match_model(const ModelFile& model) {
  if (from_text_) return;
  for (const TensorInfo& t : model.tensors()) {
    const auto it = file_stats_.find(t.name);
    if (it != file_stats_.end() && t.n_dims >= 3) split_experts(it->second, t.ne[0], t.ne[2] * t.ne[3]);
  }
}

void StatsSource::reload(std::unique_ptr<ModelFile> file) {
  STRATA_CHECK(from_text_);
  model_.reset();
  model_ = Model::load(std::move(file), *recorder_);
  reloaded_ = true;
}

bool StatsSource::can_collect_grams() const {
  if (from_text_) return true;
  for (const auto& [name, st] : file_stats_)
    for (const auto& g : st.gram)
      if (g) return true;
  return false;
}

void StatsSource::prepare(const std::set<std::string>& gram_tensors) {
  if (!from_text_) return;
  // Plain statistics are the same in every pass, unless the model was reloaded since.
  if (passes > 0 && gram_tensors.empty() && !reloaded_) return;
  reloaded_ = false;
  recorder_->stats().clear();
  recorder_->clear_grams();
  recorder_->set_gram_filter(
      [gram_tensors](const std::string& name) { return gram_tensors.count(name) > 0; });
  ++passes;
  Progress progress(
      gram_tensors.empty() ? "calibrate" : "calibrate (Hessians " + std::to_string(passes) + ")",
      static_cast<int64_t>(text_.chunks.size()));
  run_calibration(*model_, text_, [&](int64_t done, int64_t) { progress.update(done); });
  progress.finish();
  for (auto& [name, st] : recorder_->stats())
    for (auto& g : st.gram)
      if (g) g->finalize();
}

const StatsMap& StatsSource::stats() const {
  return from_text_ ? recorder_->stats() : file_stats_;
}

std::optional<InputStats> StatsSource::input_stats(const std::string& tensor, int mat, bool want_gram) const {
  const StatsMap& m = stats();
  const auto it = m.find(tensor);
  if (it == m.end() || mat >= it->second.n_mat) return std::nullopt;
  return make_input_stats(it->second, mat, want_gram);
}

}  // namespace strata::calib
