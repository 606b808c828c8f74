// `strata synth`: write a random-weight GGUF of a named real model shape, or (--from) a small real
// model embedded into that shape so that it computes the small model's function at the large cost.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/command.h"
#include "core/check.h"
#include "formats/model_file.h"
#include "model/model_embedding.h"
#include "model/synthetic_model.h"

namespace strata::cli {
namespace {

struct SynthCliOptions {
  std::string preset;
  std::string type = "f16";
  std::string out;
  std::string from;
  std::string tokenizer;
  uint64_t seed = 42;
  int threads = 0;
  std::string vocab;
};

void run(const SynthCliOptions& o) {
  const SynthPreset& preset = find_synth_preset(o.preset);
  const auto type = tensor_type_from_name(o.type);
  if (!type || !is_storage_type(*type)) STRATA_THROW("unknown tensor type '", o.type, "'");
  SynthOptions so;
  so.type = *type;
  so.seed = o.seed;
  so.n_threads = o.threads;
  so.vocab_path = o.vocab;
  const bool tty = isatty(STDERR_FILENO);
  const auto progress = [tty](size_t done, size_t total) {
    if (tty) std::fprintf(stderr, "\rwriting tensors: %zu/%zu", done, total);
    if (tty && done == total) std::fputc('\n', stderr);
  };
  if (o.from.empty()) {
    if (!o.tokenizer.empty()) STRATA_THROW("--tokenizer needs --from");
    write_synthetic_model(preset, so, o.out, progress);
  } else {
    if (!o.vocab.empty())
      STRATA_THROW("--vocab and --from exclude each other (--from brings its own tokenizer)");
    const auto small = open_model_file(o.from, o.tokenizer);
    write_embedded_model(preset, *small, so, o.out, progress);
  }
  std::fprintf(stderr, "wrote %s (%s%s%s, %s)\n", o.out.c_str(), preset.name.c_str(),
               o.from.empty() ? "" : " from ", o.from.c_str(), std::string(type_name(*type)).c_str());
}

void setup(CLI::App& cmd) {
  auto o = std::make_shared<SynthCliOptions>();
  std::string names;
  for (const SynthPreset& p : synth_presets()) names += (names.empty() ? "" : ", ") + p.name;
  cmd.add_option("--preset", o->preset, "Model shape: " + names)->required();
  cmd.add_option("--type", o->type, "Type of the weight matrices (f32, f16, bf16, q8_0, q4_0, ..., q6_k)");
  cmd.add_option("-o,--output", o->out, "Output GGUF file")->required();
  cmd.add_option(
      "--from", o->from,
      "Embed this small model (GGUF, Hugging Face directory or llama2.c .bin) into the preset's shape: "
      "the file computes the small model's function with the small model's tokenizer and vocabulary "
      "(token_embd/output have its vocab size, not the preset's)");
  cmd.add_option("--tokenizer", o->tokenizer, "llama2.c tokenizer .bin (for a --from .bin checkpoint)");
  cmd.add_option("--seed", o->seed, "Random seed");
  cmd.add_option("-t,--threads", o->threads, "Threads (0: all cores)")->check(CLI::Range(0, 1024));
  cmd.add_option("--vocab", o->vocab, "GGUF whose tokenizer replaces the synthetic one (same token count)");
  cmd.callback([o] { run(*o); });
}

}  // namespace

STRATA_REGISTER_COMMAND("", "synth", setup,
                        "Write a random-weight GGUF model of a named shape, or embed a small model into it");

}  // namespace strata::cli
