// Where a calibrated quantization gets its input statistics: an importance-matrix file (maybe
// with Gram matrices, from `strata calibrate --gram`), or calibration passes of the model itself
// over a text. Gram matrices of a whole large model do not fit in memory at once (TinyLlama's
// are 3.9 GB), so a text source runs one pass per group of layers and keeps only that group's.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "calib/activation_stats.h"
#include "calib/calibration_run.h"
#include "calib/recording_backend.h"
#include "calib/weight_matrix.h"
#include "model/model.h"

namespace strata::calib {

class StatsSource {
 public:
  // An imatrix / calibration file (read_calibration_file).
  static std::unique_ptr<StatsSource> from_file(const std::string& path);
  // Calibration over `text` on the model at `model_path`, on a CPU backend of n_threads.
  static std::unique_ptr<StatsSource> from_text(const std::string& model_path,
                                                const std::string& tokenizer_path, const std::string& text,
                                                const std::string& dataset_name, int64_t n_ctx,
                                                int64_t max_chunks, int n_threads);
  // What a command's --imatrix FILE / --calib-file TEXT flags give (at most one of them, else an
  // error): the file matched to `model`, or calibration over the text; null when neither is set.
  // `gram_user` names what needs Gram matrices (e.g. "GPTQ"; empty: nothing), so that a file
  // without them is an error naming the flag that would give them.
  struct Request {
    std::string model_path, tokenizer_path;
    std::string imatrix_path;
    std::string calib_text, calib_name;
    int64_t calib_ctx = 0, calib_chunks = 0;
    int n_threads = 1;
    std::string gram_user;
  };
  static std::unique_ptr<StatsSource> open(const Request& r, const ModelFile& model);
  ~StatsSource();

  // A file source: cuts the legacy entries of the model's expert tensors into one slice per
  // expert (split_experts in imatrix_file.h). No effect on a text source.
  void match_model(const ModelFile& model);
  // Makes statistics available for every recorded matrix, with Gram matrices for the tensors in
  // `gram_tensors` (a text source runs a pass; a file has what it has). Earlier Gram matrices are
  // dropped.
  void prepare(const std::set<std::string>& gram_tensors);
  // True when a pass can collect Gram matrices (a text source, or a file that has them).
  bool can_collect_grams() const;
  // A text source: later passes run this model instead (the same vocabulary), e.g. the source
  // with its first layers quantized. `file` must outlive the passes.
  bool can_reload() const { return from_text_; }
  void reload(std::unique_ptr<ModelFile> file);

  // The statistics of a matrix's input (slice `mat` of an expert tensor), if recorded. With
  // want_gram, the Gram matrix when one is available.
  std::optional<InputStats> input_stats(const std::string& tensor, int mat, bool want_gram) const;
  const StatsMap& stats() const;

  std::vector<std::string> datasets;
  int64_t chunk_count = 0;
  int64_t chunk_size = 0;
  int64_t passes = 0;

 private:
  StatsSource() = default;
  StatsMap file_stats_;
  bool from_text_ = false;
  bool reloaded_ = false;  // reload() since the last pass
  CalibrationText text_;
  std::unique_ptr<Backend> cpu_;
  std::unique_ptr<RecordingBackend> recorder_;
  std::unique_ptr<Model> model_;
};

// InputStats of a tensor's recorded input: means over the rows seen (Gram only with want_gram).
InputStats make_input_stats(const TensorStats& s, int mat, bool want_gram);

}  // namespace strata::calib
