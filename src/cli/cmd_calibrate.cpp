// `strata calibrate -m MODEL -f TEXT [--ctx N] [--chunks N] [--gram] -o STATS`: runs the model
// over calibration text through the engine (as llama-imatrix does) and writes, per weight
// matrix, the statistics of its input: llama.cpp's importance matrix (sum of x^2 and counts)
// plus Strata's extra columns, and with --gram the Gram matrices X^T X that `strata quantize
// --method gptq|awq --imatrix STATS` uses instead of re-running the text. The output is
// llama.cpp's GGUF imatrix format (llama-quantize reads it), or its legacy .dat format when
// STATS ends in ".dat" (sum of x^2 only; no Gram matrices).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <set>

#include "calib/imatrix_file.h"
#include "calib/stats_source.h"
#include "cli/command.h"
#include "cli/model_setup.h"
#include "core/check.h"
#include "formats/model_file.h"

namespace strata::cli {
namespace {

struct CalibrateOptions {
  ModelOptions model;
  std::string text_file;
  std::string output;
  int64_t ctx = 512;
  int64_t chunks = 0;
  bool gram = false;
};

// Names of the weight matrices (2-D or expert ".weight" tensors) of the model file.
std::set<std::string> matrix_names(const std::string& path, const std::string& tokenizer) {
  std::set<std::string> names;
  const auto file = open_model_file(path, tokenizer);
  for (const TensorInfo& t : file->tensors())
    if (t.n_dims >= 2 && t.name.ends_with(".weight")) names.insert(t.name);
  return names;
}

void run(const CalibrateOptions& o) {
  const bool dat = o.output.size() > 4 && o.output.ends_with(".dat");
  if (dat && o.gram)
    STRATA_THROW("the legacy .dat format cannot hold Gram matrices: write a .gguf for --gram");
  const std::string text = read_text_file(o.text_file);
  if (text.empty()) STRATA_THROW(o.text_file, ": the calibration text is empty");
  auto source = calib::StatsSource::from_text(o.model.model, o.model.tokenizer, text, o.text_file, o.ctx,
                                              o.chunks, o.model.threads > 0 ? o.model.threads : 0);
  source->prepare(o.gram ? matrix_names(o.model.model, o.model.tokenizer) : std::set<std::string>{});
  calib::CalibrationFile f;
  f.stats = source->stats();
  f.datasets = source->datasets;
  f.chunk_count = source->chunk_count;
  f.chunk_size = source->chunk_size;
  if (f.stats.empty()) STRATA_THROW("calibration recorded no weight matrix inputs");
  if (dat)
    calib::write_imatrix_dat(f, o.output);
  else
    calib::write_imatrix_gguf(f, o.output, o.gram);
  std::fprintf(stderr, "strata: wrote %s: %zu matrices, %lld chunks of %lld tokens%s\n", o.output.c_str(),
               f.stats.size(), static_cast<long long>(f.chunk_count), static_cast<long long>(f.chunk_size),
               o.gram ? ", with Gram matrices" : "");
}

void setup(CLI::App& cmd) {
  auto o = std::make_shared<CalibrateOptions>();
  add_model_options(cmd, o->model);
  cmd.add_option("-f,--file", o->text_file, "Calibration text")->required();
  cmd.add_option("-o,--output", o->output, "Output: GGUF imatrix (llama.cpp's format), or legacy .dat")
      ->required();
  cmd.add_option("-c,--ctx", o->ctx, "Tokens per chunk (default 512)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  cmd.add_option("--chunks", o->chunks, "Chunks at most (0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  cmd.add_flag("--gram", o->gram, "Also write each input's Gram matrix X^T X (for GPTQ / AWQ)");
  cmd.callback([o] { run(*o); });
}

}  // namespace

STRATA_REGISTER_COMMAND("", "calibrate", setup,
                        "Collect an importance matrix (and Gram matrices) of a model over calibration text");

}  // namespace strata::cli
