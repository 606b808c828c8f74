// `strata quantize IN OUT TYPE`: writes any model open_model_file accepts as a GGUF whose weight
// matrices are TYPE, the way llama.cpp's llama-quantize does for the pure types: every 2-D
// ".weight" tensor (token_embd and output included) becomes TYPE, or the type fallback_type()
// picks when its rows do not split into TYPE's blocks; 1-D tensors (norms, biases) are F32. All
// metadata is carried over, with general.file_type and general.quantization_version set.
// Tensors are converted one at a time while the file is written, in row chunks, so memory stays
// near one chunk whatever the model size.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "cli/command.h"
#include "core/check.h"
#include "core/thread_pool.h"
#include "formats/gguf_writer.h"
#include "formats/model_file.h"
#include "quant/quantize.h"

namespace strata::cli {
namespace {

struct QuantizeOptions {
  std::string input;
  std::string output;
  std::string type;
  std::string tokenizer;
  int threads = 0;
};

constexpr const char* kTypeList =
    "F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_NL IQ4_XS MXFP4 TQ1_0 TQ2_0";

TensorType parse_target_type(const std::string& name) {
  const auto t = tensor_type_from_name(name);
  if (!t || !is_storage_type(*t))
    STRATA_THROW("unknown quantization type '", name, "' (use one of ", kTypeList, ")");
  if (!can_quantize(*t))
    STRATA_THROW(
        "cannot quantize to ", type_name(*t),
        ": llama.cpp's quantizer for it needs an importance matrix, which Strata does not compute yet (",
        "use one of ", kTypeList, ")");
  return *t;
}

// The type a tensor is stored as in the output.
TensorType output_type(const TensorInfo& t, TensorType wanted) {
  const bool matrix = t.n_dims >= 2 && t.name.size() > 7 && t.name.ends_with(".weight");
  return matrix ? fallback_type(wanted, t.ne[0]) : TensorType::F32;
}

std::string shape_of(const TensorInfo& t) {
  std::string s;
  for (int d = 0; d < t.n_dims; ++d) s += (d ? " x " : "") + std::to_string(t.ne[d]);
  return s;
}

// Converts `src` (any type) into `dst` of type `to`, rows in chunks of about 4M elements.
void convert_tensor(const TensorInfo& src, TensorType to, void* dst, ThreadPool& pool) {
  const int64_t row_len = src.ne[0];
  const int64_t n_rows = row_len == 0 ? 0 : src.n_elements() / row_len;
  if (src.type == to) {  // no requantization loss
    std::memcpy(dst, src.data, src.nbytes);
    return;
  }
  const size_t src_row = row_bytes(src.type, row_len), dst_row = row_bytes(to, row_len);
  const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 22) / std::max<int64_t>(1, row_len));
  std::vector<float> f32(static_cast<size_t>(std::min(chunk, n_rows) * row_len));
  for (int64_t r0 = 0; r0 < n_rows; r0 += chunk) {
    const int64_t rows = std::min(chunk, n_rows - r0);
    const auto* in = static_cast<const uint8_t*>(src.data) + static_cast<size_t>(r0) * src_row;
    pool.parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, row_len)),
                      [&](int64_t b, int64_t e, int) {
                        for (int64_t r = b; r < e; ++r)
                          dequantize_row(src.type, in + static_cast<size_t>(r) * src_row,
                                         f32.data() + r * row_len, row_len);
                      });
    quantize_rows(to, f32.data(), static_cast<uint8_t*>(dst) + static_cast<size_t>(r0) * dst_row, rows,
                  row_len, nullptr, &pool);
  }
}

// Progress on stderr: a bar redrawn in place on a terminal, else one line per tensor.
class Progress {
 public:
  explicit Progress(size_t total) : total_(total), tty_(::isatty(STDERR_FILENO) == 1) {}
  void tensor_done(size_t index, const TensorInfo& t, TensorType to) {
    if (tty_) {
      const int width = 30, filled = static_cast<int>(static_cast<double>(index + 1) /
                                                      static_cast<double>(total_) * width);
      std::fprintf(stderr, "\r[%s%s] %zu/%zu %-40.40s", std::string(static_cast<size_t>(filled), '#').c_str(),
                   std::string(static_cast<size_t>(width - filled), '.').c_str(), index + 1, total_,
                   t.name.c_str());
      if (index + 1 == total_) std::fputc('\n', stderr);
    } else {
      std::fprintf(stderr, "[%zu/%zu] %s %s -> %s\n", index + 1, total_, t.name.c_str(),
                   std::string(type_name(t.type)).c_str(), std::string(type_name(to)).c_str());
    }
  }

 private:
  size_t total_;
  bool tty_;
};

void run(const QuantizeOptions& o) {
  const TensorType wanted = parse_target_type(o.type);
  const auto model = open_model_file(o.input, o.tokenizer);
  ThreadPool pool(o.threads > 0 ? o.threads : default_thread_count());

  GgufWriter writer;
  writer.set_metadata(model->metadata());
  writer.metadata().set("general.quantization_version", GgufValue::of_u32(2));
  writer.metadata().set("general.file_type", GgufValue::of_u32(llama_file_type(wanted)));

  std::vector<TensorType> types;
  size_t in_bytes = 0, out_bytes = 0;
  for (const TensorInfo& t : model->tensors()) {
    const TensorType to = output_type(t, wanted);
    if (to != wanted && t.n_dims >= 2 && to != TensorType::F32)
      std::fprintf(
          stderr, "strata: %s [%s]: rows of %lld do not fit %s blocks of %lld, using %s\n", t.name.c_str(),
          shape_of(t).c_str(), static_cast<long long>(t.ne[0]), std::string(type_name(wanted)).c_str(),
          static_cast<long long>(type_traits(wanted).block_size), std::string(type_name(to)).c_str());
    types.push_back(to);
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    const TensorInfo* src = &t;
    writer.add_tensor(t.name, to, ne,
                      [src, to, &pool](void* dst, size_t) { convert_tensor(*src, to, dst, pool); });
    in_bytes += t.nbytes;
    out_bytes += row_bytes(to, t.ne[0]) * static_cast<size_t>(t.n_elements() / std::max<int64_t>(1, t.ne[0]));
  }
  Progress progress(model->tensors().size());
  writer.write(o.output, [&](size_t i) { progress.tensor_done(i, model->tensors()[i], types[i]); });
  std::fprintf(stderr, "strata: wrote %s: %zu tensors, %.2f MiB -> %.2f MiB\n", o.output.c_str(),
               model->tensors().size(), static_cast<double>(in_bytes) / 1048576.0,
               static_cast<double>(out_bytes) / 1048576.0);
}

void setup(CLI::App& cmd) {
  auto o = std::make_shared<QuantizeOptions>();
  cmd.add_option("input", o->input, "Model: GGUF file, llama2.c .bin checkpoint or Hugging Face directory")
      ->required();
  cmd.add_option("output", o->output, "Output GGUF file")->required();
  cmd.add_option("type", o->type, kTypeList)->required();
  cmd.add_option("--tokenizer", o->tokenizer, "llama2.c tokenizer .bin (for a .bin checkpoint)");
  cmd.add_option("-t,--threads", o->threads, "Threads (default: physical cores)");
  cmd.callback([o] { run(*o); });
}

}  // namespace

STRATA_REGISTER_COMMAND("", "quantize", setup, "Convert a model to a GGUF file with quantized weights");

}  // namespace strata::cli
