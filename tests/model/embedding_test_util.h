// Helpers of the embedding tests (strata synth --from): fixtures, conversions of the small model
// as `strata quantize` makes them, logits of a model file over prompts, relative errors.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "common/direct_session.h"
#include "common/fixtures.h"
#include "formats/gguf_writer.h"
#include "formats/model_file.h"
#include "model/model.h"
#include "model/model_embedding.h"
#include "quant/quantize.h"

namespace strata::test {

namespace fs = std::filesystem;

inline std::string stories260k() {
  return shared_path("models/stories260K/stories260K.gguf");
}
inline std::string tinystories656k() {
  return shared_path("models/tinystories656k");
}

// A per-test scratch directory, removed at the end.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "_" + info->name();
    for (char& c : name)
      if (c == '/') c = '_';
    dir_ = fs::temp_directory_path() / ("strata-embed-" + std::to_string(::getpid()) + "-" + name);
    fs::create_directories(dir_);
  }
  ~ScratchDir() { fs::remove_all(dir_); }
  std::string path(const std::string& file) const { return (dir_ / file).string(); }

 private:
  fs::path dir_;
};

// Logits of llama.cpp for the stories260K prompts (../shared/reference/stories260K.jsonl).
struct RefPrompt {
  std::vector<int32_t> tokens;
  std::vector<float> logits;  // [n_tokens, n_vocab]
};
inline std::vector<RefPrompt> stories_reference() {
  std::ifstream in(shared_path("reference/stories260K.jsonl"));
  std::vector<RefPrompt> out;
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    RefPrompt p;
    p.tokens = j["tokens"].get<std::vector<int32_t>>();
    for (const auto& row : j["logits"])
      for (float v : row) p.logits.push_back(v);
    out.push_back(std::move(p));
  }
  return out;
}

inline std::vector<std::vector<int32_t>> tokens_of(const std::vector<RefPrompt>& ref) {
  std::vector<std::vector<int32_t>> out;
  for (const RefPrompt& p : ref) out.push_back(p.tokens);
  return out;
}

// A small model's tensor as F32, whatever its type: [n_elements].
inline std::vector<float> dequantized(const TensorInfo& t) {
  std::vector<float> v(static_cast<size_t>(t.n_elements()));
  const int64_t rows = t.n_elements() / t.ne[0];
  const size_t rb = row_bytes(t.type, t.ne[0]);
  for (int64_t r = 0; r < rows; ++r)
    dequantize_row(t.type, static_cast<const uint8_t*>(t.data) + r * rb, v.data() + r * t.ne[0], t.ne[0]);
  return v;
}

// The type `strata quantize` gives a tensor when converting to `wanted`.
inline TensorType converted_type(const TensorInfo& t, TensorType wanted) {
  return t.n_dims >= 2 ? fallback_type(wanted, t.ne[0]) : TensorType::F32;
}

// `src` converted to `wanted` as `strata quantize` does: 2-D weights quantized from their F32
// values (converted_type), 1-D tensors F32, metadata carried over.
inline void write_converted(const ModelFile& src, TensorType wanted, const std::string& path) {
  GgufWriter w;
  w.set_metadata(src.metadata());
  for (const TensorInfo& t : src.tensors()) {
    const TensorType to = converted_type(t, wanted);
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    const TensorInfo* s = &t;
    w.add_tensor(t.name, to, ne, [s, to](void* dst, size_t) {
      const std::vector<float> f = dequantized(*s);
      quantize_rows(to, f.data(), dst, s->n_elements() / s->ne[0], s->ne[0]);
    });
  }
  w.write(path);
}

inline void embed(const std::string& small_path, const SynthPreset& preset, TensorType type,
                  const std::string& out) {
  const auto small = open_model_file(small_path);
  SynthOptions o;
  o.type = type;
  o.n_threads = 2;
  write_embedded_model(preset, *small, o, out, {});
}

// Logits of every position of each prompt: [prompt][n_tokens * n_vocab].
inline std::vector<std::vector<float>> model_logits(const std::string& path,
                                                    const std::vector<std::vector<int32_t>>& prompts,
                                                    const KvCacheType& kv_type = {KvType::F32, KvType::F32}) {
  auto backend = make_cpu_backend(2);
  auto model = Model::load(path, *backend);
  std::vector<std::vector<float>> out;
  for (const auto& tokens : prompts) {
    test::DirectSession session(*model, static_cast<int64_t>(tokens.size()), kv_type);
    out.push_back(session.eval(tokens, /*all_logits=*/true));
  }
  return out;
}

// ||a - b|| / ||b|| over all prompts and positions (float64).
inline double relative_l2(const std::vector<std::vector<float>>& a,
                          const std::vector<std::vector<float>>& b) {
  EXPECT_EQ(a.size(), b.size());
  double num = 0, den = 0;
  for (size_t p = 0; p < a.size() && p < b.size(); ++p) {
    EXPECT_EQ(a[p].size(), b[p].size());
    for (size_t i = 0; i < a[p].size() && i < b[p].size(); ++i) {
      const double d = static_cast<double>(a[p][i]) - b[p][i];
      num += d * d;
      den += static_cast<double>(b[p][i]) * b[p][i];
    }
  }
  return std::sqrt(num / den);
}

// Fraction of positions whose argmax agrees.
inline double top1_agreement(const std::vector<std::vector<float>>& a,
                             const std::vector<std::vector<float>>& b, int64_t n_vocab) {
  int64_t same = 0, total = 0;
  for (size_t p = 0; p < a.size(); ++p)
    for (size_t t = 0; t * n_vocab < a[p].size(); ++t) {
      const float* x = a[p].data() + t * n_vocab;
      const float* y = b[p].data() + t * n_vocab;
      same += std::max_element(x, x + n_vocab) - x == std::max_element(y, y + n_vocab) - y;
      ++total;
    }
  return static_cast<double>(same) / static_cast<double>(total);
}

}  // namespace strata::test
