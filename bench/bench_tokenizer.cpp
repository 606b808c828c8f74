// Tokenizer speed: encoding 1 MiB of English text (data/stories260K-sampled.txt repeated) on one
// core with every vocabulary in ../shared (the llama.cpp conformance GGUFs, stories260K's SPM
// vocab and tinystories656k's tokenizer.json). bytes_per_second is the figure of merit.
// Run: bench_tokenizer [--benchmark_format=json]; STRATA_SHARED overrides the fixtures path.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "formats/hf_tokenizer.h"
#include "formats/model_file.h"
#include "tokenizer/tokenizer.h"

namespace strata {
namespace {

std::string shared_dir() {
  const char* env = std::getenv("STRATA_SHARED");
  return env && *env ? env : STRATA_SHARED_DIR;
}

const std::string& text_1mib() {
  static const std::string text = [] {
    std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/data/stories260K-sampled.txt", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string sample = ss.str();
    std::string t;
    while (!sample.empty() && t.size() < (1u << 20)) t += sample;
    t.resize(std::min<size_t>(t.size(), 1u << 20));
    return t;
  }();
  return text;
}

std::unique_ptr<Tokenizer> load(const std::string& path) {
  if (std::filesystem::is_directory(path)) {
    Metadata md;
    add_hf_tokenizer_metadata(path, md);
    return Tokenizer::from_metadata(md);
  }
  return Tokenizer::from_metadata(open_model_file(path, "")->metadata());
}

void BM_Encode(benchmark::State& state, const std::string& rel) {
  const std::string path = shared_dir() + "/" + rel;
  std::unique_ptr<Tokenizer> tok;
  try {
    tok = load(path);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  const std::string& text = text_1mib();
  size_t n_tokens = 0;
  for (auto _ : state) {
    const auto ids = tok->encode(text, false, false);
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(n_tokens);
}

const char* const kVocabs[] = {
    "models/stories260K/stories260K.gguf", "models/tinystories656k",      "vocab/ggml-vocab-llama-spm.gguf",
    "vocab/ggml-vocab-phi-3.gguf",         "vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-falcon.gguf",
    "vocab/ggml-vocab-deepseek-llm.gguf",  "vocab/ggml-vocab-mpt.gguf",   "vocab/ggml-vocab-starcoder.gguf",
};

[[maybe_unused]] const bool kRegistered = [] {
  for (const char* v : kVocabs)
    benchmark::RegisterBenchmark((std::string("BM_Encode/") + v).c_str(), BM_Encode, std::string(v))
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  return true;
}();

}  // namespace
}  // namespace strata

BENCHMARK_MAIN();
