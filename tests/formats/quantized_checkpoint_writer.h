// Test support: writes GPTQ (AutoGPTQ / GPTQModel) and AWQ (AutoAWQ GEMM) checkpoints from a
// Hugging Face F32 directory, packing the integers by the formats' documented layouts, written
// here independently of src/formats/quantized_checkpoint.cpp:
//   GPTQ qweight [n_in / pack, n_out] int32: value j of word (r, o) = q[o][r * pack + j]
//        qzeros  [n_groups, n_out / pack]: value j of word (g, c) = zero[g][c * pack + j]
//                (checkpoint_format "gptq" stores zero - 1, "gptq_v2" the zero)
//        scales  [n_groups, n_out] f16, g_idx [n_in] int32
//   AWQ  qweight [n_in, n_out / 8]: value k of word (i, c) = q[c * 8 + order[k]][i],
//        order = [0, 2, 4, 6, 1, 3, 5, 7]; qzeros the same over [n_groups, n_out / 8]
// Value k of a word sits in bits [k * bits, (k + 1) * bits). The quantization is round to
// nearest over min/max per group (GPTQ's own grid: scale = range / maxq, zero = round(-min /
// scale); symmetric: zero = (maxq + 1) / 2).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "format_test_util.h"
#include "formats/safetensors.h"

namespace strata::test {

struct QuantScheme {
  std::string method = "gptq";  // "gptq" | "awq"
  int bits = 4;
  int64_t group_size = 128;  // -1: one group over all inputs
  bool sym = false;
  bool act_order = false;  // GPTQ desc_act: groups follow a random permutation of the inputs
  bool v2 = false;         // GPTQ checkpoint_format "gptq_v2"
};

// One quantized matrix as the test's own record of the integers it packed.
struct QuantizedMatrix {
  int64_t n_out = 0, n_in = 0, n_groups = 0;
  std::vector<int> q;           // [n_out, n_in]
  std::vector<int> zero;        // [n_groups, n_out]
  std::vector<uint16_t> scale;  // [n_groups, n_out] f16 bits
  std::vector<int32_t> g_idx;   // [n_in]
  int q_at(int64_t o, int64_t i) const { return q[static_cast<size_t>(o * n_in + i)]; }
  int zero_at(int64_t g, int64_t o) const { return zero[static_cast<size_t>(g * n_out + o)]; }
  float scale_at(int64_t g, int64_t o) const {
    return fp16_to_f32(scale[static_cast<size_t>(g * n_out + o)]);
  }
  // The formats' dequantization: scale * (q - zero) of the input's group.
  float value(int64_t o, int64_t i) const {
    const int32_t g = g_idx[static_cast<size_t>(i)];
    return scale_at(g, o) * static_cast<float>(q_at(o, i) - zero_at(g, o));
  }
};

// w: [n_out, n_in] row-major.
inline QuantizedMatrix quantize_matrix(const float* w, int64_t n_out, int64_t n_in, const QuantScheme& s,
                                       uint32_t seed) {
  QuantizedMatrix m;
  m.n_out = n_out;
  m.n_in = n_in;
  const int64_t gs = s.group_size == -1 ? n_in : s.group_size;
  m.n_groups = n_in / gs;
  m.g_idx.resize(static_cast<size_t>(n_in));
  std::vector<int64_t> perm(static_cast<size_t>(n_in));
  std::iota(perm.begin(), perm.end(), 0);
  if (s.act_order) std::shuffle(perm.begin(), perm.end(), std::mt19937(seed));
  for (int64_t k = 0; k < n_in; ++k)
    m.g_idx[static_cast<size_t>(perm[static_cast<size_t>(k)])] = static_cast<int32_t>(k / gs);
  const int maxq = (1 << s.bits) - 1;
  m.q.assign(static_cast<size_t>(n_out * n_in), 0);
  m.zero.assign(static_cast<size_t>(m.n_groups * n_out), 0);
  m.scale.assign(static_cast<size_t>(m.n_groups * n_out), 0);
  for (int64_t g = 0; g < m.n_groups; ++g)
    for (int64_t o = 0; o < n_out; ++o) {
      float lo = 0, hi = 0;
      for (int64_t i = 0; i < n_in; ++i)
        if (m.g_idx[static_cast<size_t>(i)] == g) {
          lo = std::min(lo, w[o * n_in + i]);
          hi = std::max(hi, w[o * n_in + i]);
        }
      if (s.sym) hi = std::max(-lo, hi), lo = -hi;
      float scale = (hi - lo) / static_cast<float>(maxq);
      if (scale == 0) scale = 1;
      const uint16_t sb = f32_to_fp16(scale);
      scale = fp16_to_f32(sb);
      int zero = s.sym ? (maxq + 1) / 2 : static_cast<int>(std::lround(-lo / scale));
      // "gptq" stores zero - 1 in `bits` bits: keep it representable.
      zero = std::clamp(zero, s.method == "gptq" && !s.v2 ? 1 : 0, maxq);
      m.scale[static_cast<size_t>(g * n_out + o)] = sb;
      m.zero[static_cast<size_t>(g * n_out + o)] = zero;
      for (int64_t i = 0; i < n_in; ++i)
        if (m.g_idx[static_cast<size_t>(i)] == g)
          m.q[static_cast<size_t>(o * n_in + i)] =
              std::clamp(static_cast<int>(std::lround(w[o * n_in + i] / scale)) + zero, 0, maxq);
    }
  return m;
}

inline std::string int32_bytes(const std::vector<uint32_t>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

// Appends prefix.qweight / .qzeros / .scales (/ .g_idx for GPTQ).
inline void append_packed(std::vector<SafetensorsEntry>& out, const std::string& prefix,
                          const QuantizedMatrix& m, const QuantScheme& s) {
  const int bits = s.bits, pack = 32 / bits;
  const uint32_t mask = (1u << bits) - 1;
  const int64_t n_in = m.n_in, n_out = m.n_out;
  std::vector<uint32_t> qw, qz;
  if (s.method == "gptq") {
    qw.assign(static_cast<size_t>(n_in / pack * n_out), 0);
    for (int64_t r = 0; r < n_in / pack; ++r)
      for (int64_t o = 0; o < n_out; ++o)
        for (int j = 0; j < pack; ++j)
          qw[static_cast<size_t>(r * n_out + o)] |= static_cast<uint32_t>(m.q_at(o, r * pack + j))
                                                    << (bits * j);
    qz.assign(static_cast<size_t>(m.n_groups * (n_out / pack)), 0);
    for (int64_t g = 0; g < m.n_groups; ++g)
      for (int64_t c = 0; c < n_out / pack; ++c)
        for (int j = 0; j < pack; ++j) {
          const uint32_t stored = static_cast<uint32_t>(m.zero_at(g, c * pack + j) - (s.v2 ? 0 : 1)) & mask;
          qz[static_cast<size_t>(g * (n_out / pack) + c)] |= stored << (bits * j);
        }
    out.push_back({prefix + ".qweight", "I32", {n_in / pack, n_out}, int32_bytes(qw)});
  } else {
    static const int kOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    qw.assign(static_cast<size_t>(n_in * (n_out / 8)), 0);
    for (int64_t i = 0; i < n_in; ++i)
      for (int64_t c = 0; c < n_out / 8; ++c)
        for (int k = 0; k < 8; ++k)
          qw[static_cast<size_t>(i * (n_out / 8) + c)] |= static_cast<uint32_t>(m.q_at(c * 8 + kOrder[k], i))
                                                          << (4 * k);
    qz.assign(static_cast<size_t>(m.n_groups * (n_out / 8)), 0);
    for (int64_t g = 0; g < m.n_groups; ++g)
      for (int64_t c = 0; c < n_out / 8; ++c)
        for (int k = 0; k < 8; ++k)
          qz[static_cast<size_t>(g * (n_out / 8) + c)] |=
              static_cast<uint32_t>(m.zero_at(g, c * 8 + kOrder[k])) << (4 * k);
    out.push_back({prefix + ".qweight", "I32", {n_in, n_out / 8}, int32_bytes(qw)});
  }
  out.push_back({prefix + ".qzeros", "I32", {m.n_groups, n_out / pack}, int32_bytes(qz)});
  out.push_back({prefix + ".scales", "F16", {m.n_groups, n_out}, raw_values(m.scale)});
  if (s.method == "gptq") out.push_back({prefix + ".g_idx", "I32", {n_in}, raw_values(m.g_idx)});
}

inline nlohmann::json quantization_config(const QuantScheme& s) {
  if (s.method == "awq")
    return {{"quant_method", "awq"},
            {"bits", s.bits},
            {"group_size", s.group_size},
            {"zero_point", !s.sym},
            {"version", "gemm"}};
  return {{"quant_method", "gptq"},  {"bits", s.bits}, {"group_size", s.group_size},
          {"desc_act", s.act_order}, {"sym", s.sym},   {"checkpoint_format", s.v2 ? "gptq_v2" : "gptq"}};
}

// Writes `dst` as the HF directory `src` (config.json with a quantization_config, the other
// files copied) with every decoder Linear quantized by `s` and packed; returns the quantized
// matrices by HF prefix ("model.layers.0.self_attn.q_proj").
// `edit` may change the tensors (hostile checkpoints) before they are written.
inline std::map<std::string, QuantizedMatrix> write_quantized_checkpoint(
    const std::string& src, const std::string& dst, const QuantScheme& s,
    const std::function<void(std::vector<SafetensorsEntry>&)>& edit = {}) {
  namespace fs = std::filesystem;
  fs::create_directories(dst);
  for (const auto& e : fs::directory_iterator(src))
    if (e.path().filename() != "model.safetensors" && e.path().filename() != "config.json")
      fs::copy_file(e.path(), fs::path(dst) / e.path().filename(), fs::copy_options::overwrite_existing);
  std::ifstream in(fs::path(src) / "config.json");
  nlohmann::json config = nlohmann::json::parse(in);
  config["quantization_config"] = quantization_config(s);
  write_bytes((fs::path(dst) / "config.json").string(), config.dump(2));

  const auto st = SafetensorsFile::open((fs::path(src) / "model.safetensors").string());
  std::vector<SafetensorsEntry> entries;
  std::map<std::string, QuantizedMatrix> mats;
  uint32_t seed = 1;
  for (const SafetensorsTensor& t : st->tensors()) {
    const std::string& n = t.name;
    const bool linear = n.rfind("model.layers.", 0) == 0 && n.size() > 7 &&
                        n.compare(n.size() - 7, 7, ".weight") == 0 && (n.find("_proj.") != std::string::npos);
    if (!linear || t.dtype != "F32") {
      entries.push_back({n, t.dtype, t.shape, std::string(reinterpret_cast<const char*>(t.data), t.nbytes)});
      continue;
    }
    const std::string prefix = n.substr(0, n.size() - 7);
    std::vector<float> w(t.nbytes / 4);
    std::memcpy(w.data(), t.data, t.nbytes);
    QuantizedMatrix m = quantize_matrix(w.data(), t.shape[0], t.shape[1], s, seed++);
    append_packed(entries, prefix, m, s);
    mats.emplace(prefix, std::move(m));
  }
  if (edit) edit(entries);
  write_bytes((fs::path(dst) / "model.safetensors").string(), make_safetensors(entries));
  return mats;
}

}  // namespace strata::test
