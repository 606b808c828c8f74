#include "formats/quantized_checkpoint.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/check.h"
#include "core/fp16.h"
#include "formats/text_escape.h"
#include "quant/blocks.h"

namespace strata {
namespace {

using nlohmann::json;

// AutoAWQ's GEMM packing writes output column 8c + order[k] into value k of word c, with order
// [0, 2, 4, 6, 1, 3, 5, 7]; this is its inverse: the value that holds column 8c + j.
constexpr int kAwqPosition[8] = {0, 4, 1, 5, 2, 6, 3, 7};

constexpr int64_t kMaxDim = int64_t{1} << 31;

const json* field(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::string shown(const json& v) {
  return escape_for_message(v.dump());
}

// The first of `keys` present, as an integer; throws when absent or not an integer.
int64_t int_field(const json& q, std::initializer_list<const char*> keys, const std::string& name) {
  for (const char* k : keys)
    if (const json* v = field(q, k)) {
      if (!v->is_number_integer())
        STRATA_THROW(name, ": quantization_config.", k, " must be an integer, got ", shown(*v));
      return v->get<int64_t>();
    }
  STRATA_THROW(name, ": quantization_config lacks \"", *keys.begin(), "\"");
}

std::string lower_string_field(const json& q, std::initializer_list<const char*> keys, const std::string& def,
                               const std::string& name) {
  for (const char* k : keys)
    if (const json* v = field(q, k)) {
      if (!v->is_string())
        STRATA_THROW(name, ": quantization_config.", k, " must be a string, got ", shown(*v));
      std::string s = v->get<std::string>();
      for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return s;
    }
  return def;
}

void parse_gptq(const json& q, const std::string& name, QuantizedCheckpointConfig& cfg) {
  cfg.method = QuantizedCheckpointConfig::Method::Gptq;
  const int64_t bits = int_field(q, {"bits"}, name);
  if (bits != 4 && bits != 8)
    STRATA_THROW(name, ": quantization_config.bits = ", bits, " is not supported for gptq (supported: 4, 8)");
  cfg.bits = static_cast<int>(bits);
  const std::string format = lower_string_field(q, {"checkpoint_format", "format"}, "gptq", name);
  if (format != "gptq" && format != "gptq_v2")
    STRATA_THROW(name, ": quantization_config.checkpoint_format = '", escape_for_message(format),
                 "' is not supported (supported: gptq, gptq_v2)");
  cfg.stored_zero_minus_one = format == "gptq";
  const std::string pack_dtype = lower_string_field(q, {"pack_dtype"}, "int32", name);
  if (pack_dtype != "int32" && pack_dtype != "torch.int32")
    STRATA_THROW(name, ": quantization_config.pack_dtype = '", escape_for_message(pack_dtype),
                 "' is not supported (supported: int32)");
  if (const json* d = field(q, "desc_act")) {
    if (!d->is_boolean())
      STRATA_THROW(name, ": quantization_config.desc_act must be a boolean, got ", shown(*d));
    cfg.desc_act = d->get<bool>();
  }
}

void parse_awq(const json& q, const std::string& name, QuantizedCheckpointConfig& cfg) {
  cfg.method = QuantizedCheckpointConfig::Method::Awq;
  const int64_t bits = int_field(q, {"bits", "w_bit"}, name);
  if (bits != 4)
    STRATA_THROW(name, ": quantization_config.bits = ", bits, " is not supported for awq (supported: 4)");
  cfg.bits = 4;
  const std::string version = lower_string_field(q, {"version"}, "gemm", name);
  if (version != "gemm")
    STRATA_THROW(name, ": quantization_config.version = '", escape_for_message(version),
                 "' is not supported (supported: gemm)");
}

}  // namespace

std::optional<QuantizedCheckpointConfig> parse_quantization_config(const std::string& config_json,
                                                                   const std::string& name) {
  const json c = json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (c.is_discarded() || !c.is_object()) STRATA_THROW(name, ": config.json is not a valid JSON object");
  const json* q = field(c, "quantization_config");
  if (!q) return std::nullopt;
  if (!q->is_object()) STRATA_THROW(name, ": config.json \"quantization_config\" must be an object");
  const std::string method = lower_string_field(*q, {"quant_method"}, "", name);
  QuantizedCheckpointConfig cfg;
  if (method == "gptq")
    parse_gptq(*q, name, cfg);
  else if (method == "awq")
    parse_awq(*q, name, cfg);
  else
    STRATA_THROW(name, ": quantization_config.quant_method = '", escape_for_message(method),
                 "' is not supported (supported: gptq, awq)");
  cfg.group_size = int_field(*q, {"group_size", "q_group_size"}, name);
  if (cfg.group_size != -1 && (cfg.group_size <= 0 || cfg.group_size >= kMaxDim))
    STRATA_THROW(name, ": quantization_config.group_size = ", cfg.group_size, " (must be -1 or positive)");
  return cfg;
}

namespace {

// Reads the packed tensors of one Linear (validated shapes; any alignment of the mapping).
class PackedReader {
 public:
  PackedReader(const QuantizedCheckpointConfig& cfg, const PackedLinear& p, const std::string& label);

  int64_t n_in() const { return n_in_; }
  int64_t n_out() const { return n_out_; }
  int32_t group(int64_t i) const { return groups_[static_cast<size_t>(i)]; }
  int q(int64_t o, int64_t i) const {
    if (gptq_)
      return field_of(word(qweight_, (i >> pack_shift_) * n_out_ + o), static_cast<int>(i & (pack_ - 1)));
    return field_of(word(qweight_, i * (n_out_ >> 3) + (o >> 3)), kAwqPosition[o & 7]);
  }
  // q[j] = q(o, i0 + j) for the 32 inputs from i0 (a multiple of 32): the words are read once.
  void block(int64_t o, int64_t i0, int* q) const {
    if (gptq_) {
      for (int k = 0; k < kQK / pack_; ++k) {
        const uint32_t w = word(qweight_, ((i0 >> pack_shift_) + k) * n_out_ + o);
        for (int j = 0; j < pack_; ++j) q[k * pack_ + j] = field_of(w, j);
      }
      return;
    }
    const int64_t cols = n_out_ >> 3;
    const int k = kAwqPosition[o & 7];
    for (int j = 0; j < kQK; ++j) q[j] = field_of(word(qweight_, (i0 + j) * cols + (o >> 3)), k);
  }
  int zero(int64_t g, int64_t o) const {
    const int64_t cols = n_out_ >> pack_shift_;
    const int k = gptq_ ? static_cast<int>(o & (pack_ - 1)) : kAwqPosition[o & 7];
    return field_of(word(qzeros_, g * cols + (o >> pack_shift_)), k) + (minus_one_ ? 1 : 0);
  }
  fp16_t scale_bits(int64_t g, int64_t o) const {
    fp16_t h;
    std::memcpy(&h, scales_ + 2 * static_cast<size_t>(g * n_out_ + o), 2);
    return h;
  }
  float value(int64_t o, int64_t i) const {
    const int32_t g = group(i);
    return fp16_to_f32(scale_bits(g, o)) * static_cast<float>(q(o, i) - zero(g, o));
  }
  int64_t n_groups() const { return n_groups_; }
  int bits() const { return bits_; }

 private:
  uint32_t word(const uint8_t* base, int64_t index) const {
    uint32_t w;
    std::memcpy(&w, base + 4 * static_cast<size_t>(index), 4);
    return w;
  }
  int field_of(uint32_t w, int k) const { return static_cast<int>((w >> (bits_ * k)) & mask_); }
  void check_shapes(const QuantizedCheckpointConfig& cfg, const PackedLinear& p, const std::string& label);
  void read_groups(const QuantizedCheckpointConfig& cfg, const PackedLinear& p, const std::string& label);

  bool gptq_ = true, minus_one_ = false;
  int bits_ = 4, pack_ = 8, pack_shift_ = 3;  // pack_ = 32 / bits_ = 1 << pack_shift_
  uint32_t mask_ = 15;
  int64_t n_in_ = 0, n_out_ = 0, n_groups_ = 0;
  const uint8_t* qweight_ = nullptr;  // GPTQ [n_in / pack, n_out], AWQ [n_in, n_out / 8] int32
  const uint8_t* qzeros_ = nullptr;   // [n_groups, n_out / pack] int32
  const uint8_t* scales_ = nullptr;   // [n_groups, n_out] f16
  std::vector<int32_t> groups_;       // [n_in] group of each input
};

std::string shape_text(const SafetensorsTensor& t) {
  std::string s = "[";
  for (size_t d = 0; d < t.shape.size(); ++d) s += (d ? ", " : "") + std::to_string(t.shape[d]);
  return s + "]";
}

void expect_tensor(const SafetensorsTensor* t, const char* suffix, const char* dtype, size_t n_dims,
                   const std::string& label) {
  if (!t) STRATA_THROW(label, ": lacks its ", suffix, " tensor");
  if (t->dtype != dtype) STRATA_THROW(label, ": ", suffix, " has dtype ", t->dtype, ", expected ", dtype);
  if (t->shape.size() != n_dims)
    STRATA_THROW(label, ": ", suffix, " has shape ", shape_text(*t), ", expected ", n_dims, " dimensions");
}

PackedReader::PackedReader(const QuantizedCheckpointConfig& cfg, const PackedLinear& p,
                           const std::string& label) {
  gptq_ = cfg.method == QuantizedCheckpointConfig::Method::Gptq;
  minus_one_ = gptq_ && cfg.stored_zero_minus_one;
  bits_ = cfg.bits;
  pack_ = 32 / bits_;
  pack_shift_ = bits_ == 4 ? 3 : 2;
  mask_ = (1u << bits_) - 1;
  check_shapes(cfg, p, label);
  read_groups(cfg, p, label);
  qweight_ = p.qweight->data;
  qzeros_ = p.qzeros->data;
  scales_ = p.scales->data;
}

void PackedReader::check_shapes(const QuantizedCheckpointConfig& cfg, const PackedLinear& p,
                                const std::string& label) {
  expect_tensor(p.qweight, "qweight", "I32", 2, label);
  expect_tensor(p.qzeros, "qzeros", "I32", 2, label);
  expect_tensor(p.scales, "scales", "F16", 2, label);
  const int64_t rows = p.qweight->shape[0], cols = p.qweight->shape[1];
  // Bounded before multiplying: a header may claim any dims when another one is 0.
  if (rows <= 0 || cols <= 0 || rows >= kMaxDim / pack_ || cols >= kMaxDim / pack_)
    STRATA_THROW(label, ": qweight has shape ", shape_text(*p.qweight), " (dims must be in [1, 2^31 / ",
                 pack_, "))");
  n_in_ = gptq_ ? rows * pack_ : rows;
  n_out_ = gptq_ ? cols : cols * pack_;
  if (n_out_ % pack_ != 0)
    STRATA_THROW(label, ": ", n_out_, " outputs are not a multiple of ", pack_, " (qzeros packs them by ",
                 pack_, ")");
  const int64_t group_size = cfg.group_size == -1 ? n_in_ : cfg.group_size;
  if (n_in_ % group_size != 0)
    STRATA_THROW(label, ": group_size ", group_size, " does not divide the ", n_in_, " inputs");
  n_groups_ = n_in_ / group_size;
  if (p.scales->shape[0] != n_groups_ || p.scales->shape[1] != n_out_)
    STRATA_THROW(label, ": scales has shape ", shape_text(*p.scales), ", expected [", n_groups_, ", ", n_out_,
                 "]");
  if (p.qzeros->shape[0] != n_groups_ || p.qzeros->shape[1] != n_out_ / pack_)
    STRATA_THROW(label, ": qzeros has shape ", shape_text(*p.qzeros), ", expected [", n_groups_, ", ",
                 n_out_ / pack_, "]");
}

void PackedReader::read_groups(const QuantizedCheckpointConfig& cfg, const PackedLinear& p,
                               const std::string& label) {
  groups_.resize(static_cast<size_t>(n_in_));
  const int64_t group_size = n_in_ / n_groups_;
  if (!gptq_ || !p.g_idx) {
    if (gptq_ && cfg.desc_act) STRATA_THROW(label, ": desc_act is set but there is no g_idx tensor");
    for (int64_t i = 0; i < n_in_; ++i)
      groups_[static_cast<size_t>(i)] = static_cast<int32_t>(i / group_size);
    return;
  }
  expect_tensor(p.g_idx, "g_idx", "I32", 1, label);
  if (p.g_idx->shape[0] != n_in_)
    STRATA_THROW(label, ": g_idx has shape ", shape_text(*p.g_idx), ", expected [", n_in_, "]");
  for (int64_t i = 0; i < n_in_; ++i) {
    int32_t g;
    std::memcpy(&g, p.g_idx->data + 4 * static_cast<size_t>(i), 4);
    if (g < 0 || g >= n_groups_)
      STRATA_THROW(label, ": g_idx[", i, "] = ", g, " is outside the ", n_groups_, " groups");
    groups_[static_cast<size_t>(i)] = g;
  }
}

// Every run of 32 inputs lies in one group, so a GGUF block can carry the group's constants.
bool blocks_within_groups(const PackedReader& r) {
  if (r.n_in() % kQK != 0) return false;
  for (int64_t i = 0; i < r.n_in(); ++i)
    if (r.group(i) != r.group(i - i % kQK)) return false;
  return true;
}

bool all_zeros_equal(const PackedReader& r, int zero) {
  for (int64_t g = 0; g < r.n_groups(); ++g)
    for (int64_t o = 0; o < r.n_out(); ++o)
      if (r.zero(g, o) != zero) return false;
  return true;
}

// Every value s * (q - z) fits F16 (bounded by |s| * max |q - z| over the grid).
bool values_fit_f16(const PackedReader& r) {
  const int max_q = (1 << r.bits()) - 1;
  for (int64_t g = 0; g < r.n_groups(); ++g)
    for (int64_t o = 0; o < r.n_out(); ++o) {
      const int z = r.zero(g, o);
      const float bound =
          std::fabs(fp16_to_f32(r.scale_bits(g, o))) * static_cast<float>(std::max(z, max_q - z));
      if (!(bound <= 65504.0f)) return false;
    }
  return true;
}

TensorType choose_type(const PackedReader& r) {
  const bool blocks = blocks_within_groups(r);
  if (blocks && r.bits() == 4 && all_zeros_equal(r, 8)) return TensorType::Q4_0;
  const bool fits_f16 = values_fit_f16(r);  // then Q4_1's m = -scale * zero fits its f16 too
  if (blocks && r.bits() == 4 && fits_f16) return TensorType::Q4_1;
  if (blocks && r.bits() == 8 && all_zeros_equal(r, 128)) return TensorType::Q8_0;
  return fits_f16 ? TensorType::F16 : TensorType::F32;
}

// One block of 32 inputs of output o in `type`'s layout, from the integers q of the group g.
void write_block(const PackedReader& r, TensorType type, int64_t o, int32_t g, const int* q, uint8_t* out) {
  const fp16_t d = r.scale_bits(g, o);
  if (type == TensorType::Q8_0) {
    BlockQ8_0 blk;
    blk.d = d;
    for (int j = 0; j < kQK; ++j) blk.qs[j] = static_cast<int8_t>(q[j] - 128);
    std::memcpy(out, &blk, sizeof(blk));
    return;
  }
  uint8_t qs[kQK / 2];
  for (int j = 0; j < kQK / 2; ++j) qs[j] = static_cast<uint8_t>(q[j] | (q[j + kQK / 2] << 4));
  if (type == TensorType::Q4_0) {
    BlockQ4_0 blk;
    blk.d = d;
    std::memcpy(blk.qs, qs, sizeof(qs));
    std::memcpy(out, &blk, sizeof(blk));
  } else {
    BlockQ4_1 blk;
    blk.d = d;
    blk.m = f32_to_fp16(-(fp16_to_f32(d) * static_cast<float>(r.zero(g, o))));
    std::memcpy(blk.qs, qs, sizeof(qs));
    std::memcpy(out, &blk, sizeof(blk));
  }
}

// dst: [n_out] rows of [n_in / 32] blocks. Blocks are visited input-chunk-major because both
// packings are contiguous along the outputs for a fixed input.
void write_blocks(const PackedReader& r, TensorType type, uint8_t* dst) {
  const int64_t n_blocks = r.n_in() / kQK;
  const size_t row = row_bytes(type, r.n_in()), block = row / static_cast<size_t>(n_blocks);
  int q[kQK];
  for (int64_t b = 0; b < n_blocks; ++b) {
    const int32_t g = r.group(b * kQK);
    for (int64_t o = 0; o < r.n_out(); ++o) {
      r.block(o, b * kQK, q);
      write_block(r, type, o, g, q, dst + static_cast<size_t>(o) * row + static_cast<size_t>(b) * block);
    }
  }
}

void store_value(float v, TensorType type, uint8_t* dst, size_t at) {
  if (type == TensorType::F16) {
    const fp16_t h = f32_to_fp16(v);
    std::memcpy(dst + 2 * at, &h, 2);
  } else {
    std::memcpy(dst + 4 * at, &v, 4);
  }
}

// dst: [n_out, n_in] F16 or F32; each input's own group (act-order).
void write_values(const PackedReader& r, TensorType type, uint8_t* dst) {
  const int64_t n_in = r.n_in(), n_out = r.n_out();
  if (n_in % kQK != 0) {
    for (int64_t o = 0; o < n_out; ++o)
      for (int64_t i = 0; i < n_in; ++i)
        store_value(r.value(o, i), type, dst, static_cast<size_t>(o * n_in + i));
    return;
  }
  int q[kQK];
  for (int64_t i0 = 0; i0 < n_in; i0 += kQK)
    for (int64_t o = 0; o < n_out; ++o) {
      r.block(o, i0, q);
      for (int j = 0; j < kQK; ++j) {
        const int32_t g = r.group(i0 + j);
        const float v = fp16_to_f32(r.scale_bits(g, o)) * static_cast<float>(q[j] - r.zero(g, o));
        store_value(v, type, dst, static_cast<size_t>(o * n_in + i0 + j));
      }
    }
}

}  // namespace

UnpackedLinear unpack_quantized_linear(const QuantizedCheckpointConfig& config, const PackedLinear& packed,
                                       const std::string& label,
                                       const std::function<uint8_t*(size_t)>& alloc) {
  const PackedReader r(config, packed, label);
  UnpackedLinear u;
  u.type = choose_type(r);
  u.n_in = r.n_in();
  u.n_out = r.n_out();
  u.nbytes = row_bytes(u.type, u.n_in) * static_cast<size_t>(u.n_out);
  u.data = alloc(u.nbytes);
  if (u.type == TensorType::F16 || u.type == TensorType::F32)
    write_values(r, u.type, u.data);
  else
    write_blocks(r, u.type, u.data);
  return u;
}

}  // namespace strata
