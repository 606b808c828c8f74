// `strata synth`: write a random-weight GGUF of a named real model shape.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/command.h"
#include "core/check.h"
#include "model/synthetic_model.h"

namespace strata::cli {
namespace {

struct SynthCliOptions {
  std::string preset;
  std::string type = "f16";
  std::string out;
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
  write_synthetic_model(preset, so, o.out, [tty](size_t done, size_t total) {
    if (tty) std::fprintf(stderr, "\rwriting tensors: %zu/%zu", done, total);
    if (tty && done == total) std::fputc('\n', stderr);
  });
  std::fprintf(stderr, "wrote %s (%s, %s)\n", o.out.c_str(), preset.name.c_str(),
               std::string(type_name(*type)).c_str());
}

void setup(CLI::App& cmd) {
  auto o = std::make_shared<SynthCliOptions>();
  std::string names;
  for (const SynthPreset& p : synth_presets()) names += (names.empty() ? "" : ", ") + p.name;
  cmd.add_option("--preset", o->preset, "Model shape: " + names)->required();
  cmd.add_option("--type", o->type, "Type of the weight matrices (f32, f16, bf16, q8_0, q4_0, ..., q6_k)");
  cmd.add_option("-o,--output", o->out, "Output GGUF file")->required();
  cmd.add_option("--seed", o->seed, "Random seed");
  cmd.add_option("-t,--threads", o->threads, "Threads (0: all cores)")->check(CLI::Range(0, 1024));
  cmd.add_option("--vocab", o->vocab, "GGUF whose tokenizer replaces the synthetic one (same token count)");
  cmd.callback([o] { run(*o); });
}

}  // namespace

STRATA_REGISTER_COMMAND("", "synth", setup, "Write a random-weight GGUF model of a named shape");

}  // namespace strata::cli
