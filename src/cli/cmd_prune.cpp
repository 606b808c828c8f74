// `strata prune IN OUT --method magnitude|wanda|sparsegpt (--sparsity S | --pattern N:M)`: zeroes
// weights of every linear layer (calib/prune_job.h says which) and writes a dense GGUF with the
// zeros in place. --sparsity S zeroes the fraction S of each row (SparseGPT: of each block of
// columns); --pattern N:M zeroes N of every M consecutive inputs of each row (2:4, 4:8: NVIDIA's
// semi-structured sparsity). Wanda needs the inputs' norms and SparseGPT their Gram matrices: from
// --calib-file TEXT (the model is run over it) or --imatrix FILE (`strata calibrate`, with --gram
// for SparseGPT). --type TYPE stores the pruned matrices quantized: SparseGPT prunes and quantizes
// in one pass (the paper's joint mode) where TYPE holds an exact 0; otherwise, and with
// --no-joint-quant, the kept weights are rounded to nearest after pruning.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "calib/prune_job.h"
#include "cli/command.h"
#include "cli/model_setup.h"
#include "core/check.h"
#include "quant/quantize.h"
#include "server/byte_size.h"

namespace strata::cli {
namespace {

struct PruneCliOptions {
  calib::PruneJobOptions job;
  std::string method = "magnitude";
  double sparsity = -1;
  std::string pattern;
  std::string type;
  std::string calib_file;
  std::string calib_mem = "2GiB";
  bool no_joint = false;
};

void run(PruneCliOptions& c) {
  calib::PruneJobOptions& o = c.job;
  o.method = calib::parse_prune_method(c.method);
  const bool has_sparsity = c.sparsity != -1;
  if (has_sparsity == !c.pattern.empty()) STRATA_THROW("give exactly one of --sparsity S and --pattern N:M");
  o.pattern = has_sparsity ? calib::unstructured_pattern(c.sparsity) : calib::parse_nm_pattern(c.pattern);
  if (!c.type.empty()) {
    const auto t = tensor_type_from_name(c.type);
    if (!t || !is_storage_type(*t)) STRATA_THROW("unknown type '", c.type, "' for --type");
    if (!can_quantize(*t)) STRATA_THROW("cannot quantize to ", type_name(*t), " (--type)");
    o.type = *t;
  }
  if (!c.calib_file.empty()) {
    o.calib_text = read_text_file(c.calib_file);
    o.calib_name = c.calib_file;
    if (o.calib_text.empty()) STRATA_THROW(c.calib_file, ": the calibration text is empty");
  }
  o.calib_mem = server::parse_byte_size(c.calib_mem);
  o.joint_quant = !c.no_joint;
  if (!(o.sparsegpt.damp >= 0 && o.sparsegpt.damp <= 10)) STRATA_THROW("--damp must be in [0, 10]");

  const calib::PruneJobResult r = calib::run_prune_job(o);
  for (const std::string& n : r.notes) std::fprintf(stderr, "strata: %s\n", n.c_str());
  int64_t zeros = 0, elements = 0;
  for (const calib::PrunedTensor& t : r.tensors) {
    std::fprintf(stderr, "%-28s %-15s %-7s %-26s %6.2f%% zero\n", t.name.c_str(), t.shape.c_str(),
                 std::string(type_name(t.type)).c_str(), t.how.c_str(),
                 100.0 * static_cast<double>(t.zeros) / static_cast<double>(t.elements));
    zeros += t.zeros;
    elements += t.elements;
  }
  std::fprintf(
      stderr,
      "strata: wrote %s: %zu matrices pruned (%.2f%% of their weights zero), %.2f MiB -> %.2f MiB%s\n",
      o.output.c_str(), r.tensors.size(), 100.0 * static_cast<double>(zeros) / static_cast<double>(elements),
      static_cast<double>(r.in_bytes) / 1048576.0, static_cast<double>(r.out_bytes) / 1048576.0,
      r.calibration_passes > 0
          ? (", " + std::to_string(r.calibration_passes) + " calibration pass(es)").c_str()
          : "");
}

void setup(CLI::App& cmd) {
  auto c = std::make_shared<PruneCliOptions>();
  calib::PruneJobOptions& o = c->job;
  cmd.add_option("input", o.input, "Model: GGUF file, llama2.c .bin checkpoint or Hugging Face directory")
      ->required();
  cmd.add_option("output", o.output, "Output GGUF file")->required();
  cmd.add_option("--method", c->method, "magnitude (default), wanda or sparsegpt");
  cmd.add_option("--sparsity", c->sparsity, "Fraction of each row's weights zeroed, in (0, 1)");
  cmd.add_option("--pattern", c->pattern, "N:M: N of every M consecutive weights zeroed (2:4, 4:8)");
  cmd.add_option("--type", c->type,
                 "Store the pruned matrices as this type (default: the source's float type)");
  cmd.add_option("--tokenizer", o.tokenizer, "llama2.c tokenizer .bin (for a .bin checkpoint)");
  cmd.add_option("-t,--threads", o.threads, "Threads (default: physical cores)")->check(CLI::Range(0, 1024));
  cmd.add_option("--imatrix", o.imatrix_path, "Statistics file of `strata calibrate` (--gram for sparsegpt)");
  cmd.add_option("--calib-file", c->calib_file, "Calibration text to run the model over");
  cmd.add_option("--calib-ctx", o.calib_ctx, "Tokens per calibration chunk (default 512)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  cmd.add_option("--calib-chunks", o.calib_chunks, "Calibration chunks at most (0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  cmd.add_option("--calib-mem", c->calib_mem, "Gram matrices held per calibration pass (default 2GiB)");
  cmd.add_flag("--sequential", o.sequential,
               "Calibrate each layer on the already pruned layers before it (one pass per layer)");
  cmd.add_option("--damp", o.sparsegpt.damp, "SparseGPT: damping, a fraction of mean(diag H) (default 0.01)");
  cmd.add_option("--block", o.sparsegpt.block,
                 "SparseGPT: columns per lazy batch and mask block (default 128)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd.add_flag(
      "--no-joint-quant", c->no_joint,
      "SparseGPT with --type: prune, then round the kept weights (default: quantize in the same "
      "pass, errors compensated, where the type holds an exact 0: Q4_0, Q5_0, Q8_0, Q3_K, Q6_K, ...)");
  cmd.callback([c] { run(*c); });
}

}  // namespace

STRATA_REGISTER_COMMAND("", "prune", setup,
                        "Zero weights of a model's linear layers (magnitude, Wanda, SparseGPT)");

}  // namespace strata::cli
