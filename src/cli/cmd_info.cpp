// `strata info`: what a model file holds — format, hyper-parameters, metadata and tensors.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>

#include "cli/command.h"
#include "core/check.h"
#include "formats/model_file.h"
#include "model/model_config.h"

namespace strata::cli {
namespace {

struct InfoOptions {
  std::string model;
  std::string tokenizer;
  bool all_metadata = false;
};

const char* format_name(ModelFormat f) {
  switch (f) {
    case ModelFormat::Gguf:
      return "gguf";
    case ModelFormat::Llama2c:
      return "llama2.c";
    case ModelFormat::HuggingFace:
      return "huggingface";
  }
  return "?";
}

std::string shape_string(const TensorInfo& t) {
  std::string s = "[";
  for (int i = 0; i < std::max(1, t.n_dims); ++i)
    s += (i ? ", " : "") + std::to_string(t.ne[static_cast<size_t>(i)]);
  return s + "]";
}

void run(const InfoOptions& o) {
  const auto file = open_model_file(o.model, o.tokenizer);
  const Metadata& md = file->metadata();
  std::printf("file: %s\nformat: %s\n", o.model.c_str(), format_name(file->format()));
  ModelConfig config;
  std::string config_error;
  try {
    config = ModelConfig::from_metadata(md);
  } catch (const Error& e) {
    config_error = e.what();
  }
  if (config_error.empty()) {
    std::printf("architecture: %s\n", config.arch.c_str());
    if (!config.name.empty()) std::printf("name: %s\n", config.name.c_str());
    std::printf("n_layer: %lld\nn_embd: %lld\nn_ff: %lld\nn_head: %lld\nn_head_kv: %lld\nhead_dim: %lld\n",
                static_cast<long long>(config.n_layer), static_cast<long long>(config.n_embd),
                static_cast<long long>(config.n_ff), static_cast<long long>(config.n_head),
                static_cast<long long>(config.n_head_kv), static_cast<long long>(config.head_dim));
    std::printf("n_vocab: %lld\nn_ctx_train: %lld\nrms_eps: %g\nrope: %s, base %g, n_rot %d\n",
                static_cast<long long>(config.n_vocab), static_cast<long long>(config.n_ctx_train),
                config.rms_eps, config.rope.style == RopeStyle::NeoX ? "neox" : "interleaved",
                config.rope.freq_base, config.rope.n_rot);
    if (config.sliding_window)
      std::printf("sliding_window: %lld\n", static_cast<long long>(config.sliding_window));
    std::printf("config: %s\n", config.summary().c_str());
  }
  std::printf("metadata: %zu keys\n", md.size());
  for (const auto& [key, value] : md.entries()) {
    if (!o.all_metadata && value.as_array() && value.as_array()->size() > 16) {
      std::printf("  %s = [%s x %zu]\n", key.c_str(),
                  std::string(gguf_type_name(value.as_array()->elem_type)).c_str(), value.as_array()->size());
      continue;
    }
    std::printf("  %s = %s\n", key.c_str(), value.to_display_string(o.all_metadata ? SIZE_MAX : 8).c_str());
  }
  std::map<std::string, std::pair<size_t, size_t>> by_type;  // type -> (count, bytes)
  std::printf("tensors: %zu\n", file->tensors().size());
  for (const TensorInfo& t : file->tensors()) {
    std::printf("  %-32s %-5s %-20s %zu bytes\n", t.name.c_str(), std::string(type_name(t.type)).c_str(),
                shape_string(t).c_str(), t.nbytes);
    auto& e = by_type[std::string(type_name(t.type))];
    ++e.first;
    e.second += t.nbytes;
  }
  size_t total = 0;
  for (const auto& [type, e] : by_type) {
    std::printf("type %s: %zu tensors, %.2f MiB\n", type.c_str(), e.first, e.second / 1048576.0);
    total += e.second;
  }
  std::printf("total: %.2f MiB of tensor data\n", total / 1048576.0);
  if (!config_error.empty()) STRATA_THROW("not a runnable model: ", config_error);
}

void setup(CLI::App& cmd) {
  auto o = std::make_shared<InfoOptions>();
  cmd.add_option("-m,--model", o->model,
                 "Model: GGUF file, llama2.c .bin checkpoint or Hugging Face directory")
      ->required();
  cmd.add_option("--tokenizer", o->tokenizer, "llama2.c tokenizer .bin (for a .bin checkpoint)");
  cmd.add_flag("--all", o->all_metadata, "Print long metadata arrays in full");
  cmd.callback([o] { run(*o); });
}

}  // namespace

STRATA_REGISTER_COMMAND("", "info", setup,
                        "Show a model's architecture, hyper-parameters, metadata and tensors");

}  // namespace strata::cli
