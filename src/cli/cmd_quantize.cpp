// `strata quantize IN OUT TYPE`: writes any model open_model_file accepts (GGUF, llama2.c,
// Hugging Face directories) as a GGUF, the way llama.cpp's
// llama-quantize does: TYPE is a llama.cpp file type (pure types and the K-quant mixtures, see
// calib/quant_plan.h), --pure makes every matrix TYPE, --tensor-type / --output-tensor-type /
// --token-embedding-type override single tensors, and rows that do not split into a type's
// blocks fall back as in llama.cpp. 1-D tensors (norms, biases) are F32. All metadata is carried
// over, with general.file_type and general.quantization_version set.
//
// Calibration: --imatrix FILE (llama.cpp's GGUF or .dat imatrix, or `strata calibrate`'s output)
// weights every quantizer's scale search per column; --calib-file TEXT runs the model over a
// text itself. --method gptq | awq | awq+gptq use the inputs' Gram matrices (from the text, or a
// file made with `strata calibrate --gram`). The output is standard GGUF types only.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "calib/quantize_job.h"
#include "cli/command.h"
#include "cli/model_setup.h"
#include "core/check.h"
#include "quant/quantize.h"
#include "server/byte_size.h"

namespace strata::cli {
namespace {

struct QuantizeCliOptions {
  calib::QuantizeJobOptions job;
  std::string type;
  std::string method = "rtn";
  std::string calib_file;
  std::string calib_mem = "2GiB";
  std::vector<std::string> tensor_types;
  std::string output_tensor_type, token_embedding_type;
  std::string embd_readers;
  bool no_summary = false;
};

// "A,F,L,O,I": the weights of QuantizeJobOptions::EmbeddingReaders, in its order.
calib::QuantizeJobOptions::EmbeddingReaders parse_embd_readers(const std::string& s) {
  double v[5];
  size_t pos = 0;
  for (int i = 0; i < 5; ++i) {
    const size_t end = i < 4 ? s.find(',', pos) : s.size();
    if (end == std::string::npos) STRATA_THROW("--embd-readers needs five numbers A,F,L,O,I: '", s, "'");
    try {
      size_t used = 0;
      v[i] = std::stod(s.substr(pos, end - pos), &used);
      if (used != end - pos || v[i] < 0) throw std::invalid_argument("bad");
    } catch (const std::exception&) {
      STRATA_THROW("--embd-readers: '", s.substr(pos, end - pos), "' is not a number >= 0");
    }
    pos = end + 1;
  }
  return {v[0], v[1], v[2], v[3], v[4]};
}

TensorType parse_tensor_type_option(const std::string& name, const char* option) {
  const auto t = tensor_type_from_name(name);
  if (!t || !is_storage_type(*t)) STRATA_THROW("unknown type '", name, "' for ", option);
  if (!can_quantize(*t)) STRATA_THROW("cannot quantize to ", type_name(*t), " (", option, ")");
  return *t;
}

const calib::FileTypePreset* parse_target(const std::string& name) {
  if (const calib::FileTypePreset* p = calib::find_file_type(name)) return p;
  const auto t = tensor_type_from_name(name);
  if (t && is_storage_type(*t))
    STRATA_THROW("'", name, "' is a tensor type but not one of llama.cpp's file types (use one of ",
                 calib::file_type_names(), ", or --pure / --tensor-type for single types)");
  STRATA_THROW("unknown quantization type '", name, "' (use one of ", calib::file_type_names(), ")");
}

void run(QuantizeCliOptions& c) {
  calib::QuantizeJobOptions& o = c.job;
  o.method = calib::parse_method(c.method);
  o.plan.preset = parse_target(c.type);
  for (const std::string& tt : c.tensor_types)
    o.plan.overrides.push_back(calib::parse_tensor_type_override(tt));
  if (!c.output_tensor_type.empty())
    o.plan.output_type = parse_tensor_type_option(c.output_tensor_type, "--output-tensor-type");
  if (!c.token_embedding_type.empty())
    o.plan.token_embedding_type = parse_tensor_type_option(c.token_embedding_type, "--token-embedding-type");
  if (!c.calib_file.empty()) {
    o.calib_text = read_text_file(c.calib_file);
    o.calib_name = c.calib_file;
    if (o.calib_text.empty()) STRATA_THROW(c.calib_file, ": the calibration text is empty");
  }
  o.calib_mem = server::parse_byte_size(c.calib_mem);
  if (!c.embd_readers.empty()) o.embd = parse_embd_readers(c.embd_readers);
  if (o.gptq.damp < 0 || o.gptq.damp > 10) STRATA_THROW("--damp must be in [0, 10]");

  const calib::QuantizeJobResult r = calib::run_quantize_job(o);
  for (const calib::TensorReport& t : r.tensors)
    if (t.fell_back)
      std::fprintf(stderr, "strata: %s [%s]: rows of %s do not fit %s blocks of %lld, using %s\n",
                   t.name.c_str(), t.shape.c_str(), t.shape.substr(0, t.shape.find(' ')).c_str(),
                   std::string(type_name(t.wanted)).c_str(),
                   static_cast<long long>(type_traits(t.wanted).block_size),
                   std::string(type_name(t.to)).c_str());
  for (const std::string& n : r.notes) std::fprintf(stderr, "strata: %s\n", n.c_str());
  if (!c.no_summary) std::fputs(calib::format_summary(r).c_str(), stderr);
  std::fprintf(stderr, "strata: wrote %s: %zu tensors, %.2f MiB -> %.2f MiB%s\n", o.output.c_str(),
               r.tensors.size(), static_cast<double>(r.in_bytes) / 1048576.0,
               static_cast<double>(r.out_bytes) / 1048576.0,
               r.calibration_passes > 0
                   ? (", " + std::to_string(r.calibration_passes) + " calibration pass(es)").c_str()
                   : "");
}

void setup(CLI::App& cmd) {
  auto c = std::make_shared<QuantizeCliOptions>();
  calib::QuantizeJobOptions& o = c->job;
  cmd.add_option("input", o.input, "Model: GGUF file, llama2.c .bin checkpoint or Hugging Face directory")
      ->required();
  cmd.add_option("output", o.output, "Output GGUF file")->required();
  cmd.add_option("type", c->type, calib::file_type_names())->required();
  cmd.add_option("--tokenizer", o.tokenizer, "llama2.c tokenizer .bin (for a .bin checkpoint)");
  cmd.add_option("-t,--threads", o.threads, "Threads (default: physical cores)")->check(CLI::Range(0, 1024));
  cmd.add_flag("--pure", o.plan.pure, "Every matrix TYPE: no mixture rules (llama-quantize --pure)");
  cmd.add_option("--imatrix", o.imatrix_path,
                 "Importance matrix: llama.cpp's GGUF or .dat, or `strata calibrate`'s");
  cmd.add_option("--method", c->method, "rtn (default), gptq, awq or awq+gptq");
  cmd.add_option("--calib-file", c->calib_file,
                 "Calibration text to run the model over (instead of --imatrix)");
  cmd.add_option("--calib-ctx", o.calib_ctx, "Tokens per calibration chunk (default 512)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  cmd.add_option("--calib-chunks", o.calib_chunks, "Calibration chunks at most (0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  cmd.add_option("--calib-mem", c->calib_mem, "Gram matrices held per calibration pass (default 2GiB)");
  cmd.add_option("--tensor-type", c->tensor_types,
                 "PATTERN=TYPE: tensors matching the regex get TYPE (repeatable)");
  cmd.add_option("--output-tensor-type", c->output_tensor_type, "Type of output.weight");
  cmd.add_option("--token-embedding-type", c->token_embedding_type, "Type of token_embd.weight");
  cmd.add_option("--damp", o.gptq.damp, "GPTQ: damping, a fraction of mean(diag H) (default 0.01)");
  cmd.add_flag("--sequential", o.sequential,
               "Calibrate each layer on the already quantized layers before it (one pass per layer)");
  cmd.add_flag("--act-order", o.gptq.act_order,
               "GPTQ: quantize blocks (and columns within them) by activation");
  cmd.add_option("--gptq-clip", o.gptq.param_candidates,
                 "GPTQ: clip ratios (1, 0.95, ...) tried for each block's scales (default 1: none)")
      ->check(CLI::Range(1, 10));
  cmd.add_flag(
      "--no-gptq-refit", [&](int64_t) { o.gptq.refit_scales = false; },
      "GPTQ: keep each block's scale as chosen in the column pass (no least-squares refit)");
  cmd.add_option("--gptq-descent", o.gptq.descent_rounds,
                 "GPTQ: rounds of coordinate descent on the levels after the column pass, each "
                 "followed by the scale refit (default 0)")
      ->check(CLI::Range(0, 100));
  cmd.add_option("--gptq-descent-sweeps", o.gptq.descent_sweeps,
                 "GPTQ: column sweeps per descent round at most (default 8)")
      ->check(CLI::Range(1, 1000));
  cmd.add_option(
      "--embd-readers", c->embd_readers,
      "GPTQ on the untied token embedding (methods other than rtn): weights A,F,L,O,I of "
      "its readers' Hessian: every layer's q/k/v, layer 0's gate/up, the later layers' gate/up, the "
      "output matrix's, and the identity (default 0,0,0,0,0: round to nearest; 0,1,0,1,1 gained on "
      "synth-tiny)");
  cmd.add_option("--gptq-batch", o.gptq.batch, "GPTQ: lazy batch in columns (default 128)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd.add_option("--awq-grid", o.awq.n_grid, "AWQ: points of the scale exponent grid (default 20)")
      ->check(CLI::Range(1, 1000));
  cmd.add_flag(
      "--no-clip", [c](int64_t) { c->job.clip = false; }, "AWQ: skip the clip search");
  cmd.add_flag("--no-summary", c->no_summary, "Do not print the per-tensor summary table");
  cmd.callback([c] { run(*c); });
}

}  // namespace

STRATA_REGISTER_COMMAND("", "quantize", setup, "Convert a model to a GGUF file with quantized weights");

}  // namespace strata::cli
