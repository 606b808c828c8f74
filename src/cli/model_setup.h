// Options and loading shared by the subcommands that run a model.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "engine/spec/spec_config.h"
#include "kv/kv_evict_policy.h"
#include "kv/kv_window_policy.h"
#include "model/model.h"

namespace CLI {
class App;
}

namespace strata::cli {

// The KV cache types of the commands that run a model (run, serve, bench, perplexity, kld):
// llama.cpp's --cache-type-k/-ctk and --cache-type-v/-ctv, --kv-type for both, --no-kv-rotation.
struct KvOptions {
  std::string both = "f16";  // --kv-type
  std::string k, v;          // -ctk, -ctv: override --kv-type when given
  bool no_rotation = false;  // --no-kv-rotation
  // Throws strata::Error naming the valid types for an unknown one.
  KvCacheType resolve() const;
};

// W8A8 made at load (model/w8a8_plan.h): --w8a8, --w8a8-stats, --smoothquant, --smooth-alpha.
struct W8A8Options {
  std::string mode;     // --w8a8: "" (off), "dynamic" or "static"
  std::string stats;    // --w8a8-stats: `strata calibrate` output (static, SmoothQuant)
  bool smooth = false;  // --smoothquant
  float alpha = 0.5f;   // --smooth-alpha
};

struct ModelOptions {
  std::string model;      // -m: GGUF file, llama2.c .bin or HF directory
  std::string tokenizer;  // --tokenizer: llama2.c tokenizer .bin
  int threads = 0;        // --threads: 0 = all cores
  KvOptions kv;           // set by add_kv_options
  W8A8Options w8a8;       // set by add_w8a8_options
};

void add_model_options(CLI::App& cmd, ModelOptions& options, bool with_threads = true);
// --w8a8 and its companions, for the commands that load through load_model / load_model_on.
void add_w8a8_options(CLI::App& cmd, W8A8Options& options);
// Opens options.model and loads it on `backend` with mo, as W8A8 when --w8a8 asks (SmoothQuant
// folded first with --smoothquant). Throws strata::Error for inconsistent flags.
std::unique_ptr<Model> load_model_on(const ModelOptions& options, Backend& backend, ModelLoadOptions mo);
void add_kv_options(CLI::App& cmd, KvOptions& options);
// --kv-sinks N --kv-window W: StreamingLLM attention sinks + window (kv/kv_window_policy.h).
void add_kv_window_options(CLI::App& cmd, KvWindowPolicy& policy);
// --kv-evict snapkv|h2o|recent --kv-budget N [--kv-evict-window W] [--kv-evict-pool K (snapkv)]:
// score-based eviction of long prompts (kv/kv_evict_policy.h).
struct KvEvictOptions {
  std::string method = "none";  // none | snapkv | h2o | recent
  KvEvictPolicy policy;
  std::optional<int32_t> pool;  // --kv-evict-pool as given (unset: snapkv's default)
  // The policy the flags ask for; throws strata::Error for an unknown method, a budget without
  // a method or a method without a budget, --kv-evict-pool with another method than snapkv,
  // and values out of range.
  KvEvictPolicy resolve() const;
};
void add_kv_evict_options(CLI::App& cmd, KvEvictOptions& options);
// A KV element type by name ("f16", "q8_0", ...); throws strata::Error naming the valid ones.
KvType parse_kv_type(const std::string& name);

struct LoadedModel {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
};

// Creates the CPU backend and loads the model; logs the load time and summary to stderr.
LoadedModel load_model(const ModelOptions& options);

// Speculative decoding flags of run, serve and bench (llama.cpp's names where it has them).
struct SpecOptions {
  std::string methods;  // --spec METHOD[,METHOD]
  int32_t draft_max = 16;
  int32_t draft_min = 0;
  float draft_p_min = 0.0f;
  bool fixed = false;  // --spec-fixed: always draft draft_max (no adaptive lengths)
  std::string calibration_file;
};
void add_spec_options(CLI::App& cmd, SpecOptions& options);
// Parses and validates; throws strata::Error for a bad method or range.
SpecConfig spec_config(const SpecOptions& options);

// Reads a whole text file (for -f); throws strata::Error with a clean message.
std::string read_text_file(const std::string& path);

}  // namespace strata::cli
