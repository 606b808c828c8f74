#include "cli/model_setup.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <fstream>
#include <sstream>

#include "core/check.h"
#include "core/log.h"

namespace strata::cli {

void add_model_options(CLI::App& cmd, ModelOptions& o, bool with_threads) {
  cmd.add_option("-m,--model", o.model, "Model: GGUF file, llama2.c .bin checkpoint or Hugging Face directory")
      ->required();
  cmd.add_option("--tokenizer", o.tokenizer, "llama2.c tokenizer .bin (for a .bin checkpoint)");
  if (with_threads)
    cmd.add_option("-t,--threads", o.threads, "Compute threads (0: all cores)")->check(CLI::Range(0, 1024));
}

LoadedModel load_model(const ModelOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  LoadedModel lm;
  lm.backend = make_cpu_backend(o.threads);
  ModelLoadOptions mo;
  mo.tokenizer_path = o.tokenizer;
  lm.model = Model::load(o.model, *lm.backend, mo);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  log_info("loaded ", o.model, " in ", static_cast<int>(ms), " ms: ", lm.model->config().summary());
  log_info("backend ", lm.backend->name(), ", ", lm.backend->n_threads(), " threads");
  return lm;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) STRATA_THROW(path, ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) STRATA_THROW(path, ": read error");
  return ss.str();
}

}  // namespace strata::cli
