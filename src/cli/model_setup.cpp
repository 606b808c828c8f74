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

void add_kv_options(CLI::App& cmd, KvOptions& o) {
  const std::string types = " (" + kv_type_names() + ")";
  cmd.add_option("--kv-type", o.both, "KV cache element type of K and V, default f16" + types);
  // -ctk / -ctv (llama.cpp's spellings) are expanded to these names in main.cpp.
  cmd.add_option("--cache-type-k", o.k, "(-ctk) KV cache element type of K (overrides --kv-type)" + types);
  cmd.add_option("--cache-type-v", o.v, "(-ctv) KV cache element type of V (overrides --kv-type)" + types);
  cmd.add_flag("--no-kv-rotation", o.no_rotation,
               "Store quantized K without the Hadamard rotation of K and Q (on by default for the per-token "
               "quantized K types q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl; KIVI K is never rotated)");
}

KvType parse_kv_type(const std::string& name) {
  const std::optional<KvType> t = kv_type_from_name(name);
  if (!t) STRATA_THROW("unknown KV cache type '", name, "' (use one of ", kv_type_names(), ")");
  return *t;
}

KvCacheType KvOptions::resolve() const {
  KvCacheType t;
  t.k = parse_kv_type(k.empty() ? both : k);
  t.v = parse_kv_type(v.empty() ? both : v);
  t.rotate_k = !no_rotation;
  return t;
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
