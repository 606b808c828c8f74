// Helpers shared by the quantization tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/fixtures.h"
#include "core/tensor_type.h"
#include "formats/gguf_reader.h"
#include "quant/quantize.h"

namespace strata::test {

// Every storage type Strata quantizes to.
inline const std::vector<TensorType>& storage_types() {
  static const std::vector<TensorType> types = {
      TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q8_0, TensorType::Q4_0,
      TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q2_K, TensorType::Q3_K,
      TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};
  return types;
}

inline std::vector<float> gaussian(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Quantizes then dequantizes one row.
inline std::vector<float> round_trip(TensorType type, const std::vector<float>& x,
                                     const float* importance = nullptr) {
  std::vector<uint8_t> q(row_bytes(type, static_cast<int64_t>(x.size())));
  quantize_row(type, x.data(), q.data(), static_cast<int64_t>(x.size()), importance);
  std::vector<float> y(x.size());
  dequantize_row(type, q.data(), y.data(), static_cast<int64_t>(x.size()));
  return y;
}

// Sum of squared differences, in double.
inline double sq_error(const float* a, const float* b, size_t n, const float* w = nullptr) {
  double e = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    e += (w ? w[i] : 1.0) * d * d;
  }
  return e;
}

inline double sum_sq(const float* a, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += static_cast<double>(a[i]) * a[i];
  return s;
}

// Whole tensor decoded to f32 with dequantize_row, row by row (rows of ne[0] elements).
inline std::vector<float> decode_tensor(const TensorInfo& t) {
  const int64_t row = t.ne[0];
  const int64_t rows = t.n_elements() / row;
  const size_t rb = row_bytes(t.type, row);
  std::vector<float> out(static_cast<size_t>(t.n_elements()));
  for (int64_t r = 0; r < rows; ++r)
    dequantize_row(t.type, static_cast<const uint8_t*>(t.data) + r * rb, out.data() + r * row, row);
  return out;
}

inline std::string synth_tiny_path(const std::string& suffix) {
  return shared_path("models/synth-tiny/synth-tiny-" + suffix + ".gguf");
}

// The llama.cpp-made synth-tiny files and the storage type their name says (Q3_K_S, Q4_K_S,
// Q5_K_S, Q4_K_M also hold tensors of other types: callers look at each tensor's own type).
struct SynthFile {
  std::string suffix;
  TensorType type;
};
inline const std::vector<SynthFile>& synth_files() {
  static const std::vector<SynthFile> files = {
      {"f16", TensorType::F16},     {"bf16", TensorType::BF16},   {"q8_0", TensorType::Q8_0},
      {"q4_0", TensorType::Q4_0},   {"q4_1", TensorType::Q4_1},   {"q5_0", TensorType::Q5_0},
      {"q5_1", TensorType::Q5_1},   {"q2_k", TensorType::Q2_K},   {"q3_k_s", TensorType::Q3_K},
      {"q4_k_s", TensorType::Q4_K}, {"q4_k_m", TensorType::Q4_K}, {"q5_k_s", TensorType::Q5_K},
      {"q6_k", TensorType::Q6_K}};
  return files;
}

}  // namespace strata::test
