#include "formats/hf_loader.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/check.h"
#include "core/log.h"
#include "formats/hf_tokenizer.h"
#include "formats/quantized_checkpoint.h"
#include "formats/text_escape.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// JSON files of a model directory are small; anything larger is not a config.
constexpr uintmax_t kMaxJsonBytes = 64u << 20;

std::string read_text_file(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) STRATA_THROW(path, ": cannot read: ", ec.message());
  if (size > kMaxJsonBytes) STRATA_THROW(path, ": ", size, " bytes is too large for a JSON config");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in) STRATA_THROW(path, ": cannot read");
  return ss.str();
}

json read_json_file(const std::string& path) {
  json j = json::parse(read_text_file(path), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) STRATA_THROW(path, ": not a valid JSON object");
  return j;
}

struct ArchInfo {
  const char* hf_name;
  const char* arch;
  bool permute_qk;          // HF rotate-half layout -> GGUF interleaved rope
  int64_t default_context;  // HF config class default for max_position_embeddings
};

constexpr ArchInfo kArchs[] = {
    {"LlamaForCausalLM", "llama", true, 2048},
    {"MistralForCausalLM", "mistral", true, 131072},
    {"Qwen2ForCausalLM", "qwen2", false, 32768},
};

const ArchInfo& find_arch(const json& config, const std::string& name) {
  const json* archs = config.contains("architectures") ? &config["architectures"] : nullptr;
  if (!archs || !archs->is_array() || archs->empty() || !(*archs)[0].is_string())
    STRATA_THROW(name, ": config.json has no \"architectures\" list");
  const std::string hf = (*archs)[0].get<std::string>();
  for (const ArchInfo& a : kArchs)
    if (hf == a.hf_name) return a;
  STRATA_THROW(name, ": unsupported architecture '", escape_for_message(hf),
               "' (supported: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM)");
}

// A config entry that is present and not null.
const json* field(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

int64_t positive_int(const json& obj, const char* key, const std::string& name,
                     std::optional<int64_t> def = {}) {
  const json* v = field(obj, key);
  if (!v) {
    if (def) return *def;
    STRATA_THROW(name, ": config.json lacks \"", key, "\"");
  }
  if (!v->is_number_integer() || v->get<int64_t>() <= 0 || v->get<int64_t>() > (int64_t{1} << 31))
    STRATA_THROW(name, ": config.json \"", key, "\" must be a positive integer, got ", v->dump());
  return v->get<int64_t>();
}

double number(const json& obj, const char* key, const std::string& name, double def) {
  const json* v = field(obj, key);
  if (!v) return def;
  if (!v->is_number()) STRATA_THROW(name, ": config.json \"", key, "\" must be a number, got ", v->dump());
  return v->get<double>();
}

GgufValue u32(int64_t v) {
  return GgufValue::of_u32(static_cast<uint32_t>(v));
}
GgufValue f32(double v) {
  return GgufValue::of_f32(static_cast<float>(v));
}

void add_rope_scaling(const json& config, const std::string& arch, const std::string& name, Metadata& md) {
  const json* rs = field(config, "rope_scaling");
  if (!rs) return;
  if (!rs->is_object()) STRATA_THROW(name, ": config.json \"rope_scaling\" must be an object or null");
  const json* type = field(*rs, "rope_type");
  if (!type) type = field(*rs, "type");
  const std::string t = type && type->is_string() ? type->get<std::string>() : "";
  const std::string k = arch + ".rope.scaling.";
  if (t == "default") return;
  if (t == "linear") {
    md.add(k + "type", GgufValue::of_string("linear"));
    md.add(k + "factor", f32(number(*rs, "factor", name, 1.0)));
  } else if (t == "llama3") {
    md.add(k + "type", GgufValue::of_string("llama3"));
    md.add(k + "factor", f32(number(*rs, "factor", name, 8.0)));
    md.add(k + "low_freq_factor", f32(number(*rs, "low_freq_factor", name, 1.0)));
    md.add(k + "high_freq_factor", f32(number(*rs, "high_freq_factor", name, 4.0)));
    md.add(k + "original_context_length",
           u32(positive_int(*rs, "original_max_position_embeddings", name, 8192)));
  } else {
    STRATA_THROW(name, ": unsupported rope_scaling type '", escape_for_message(t.empty() ? rs->dump() : t),
                 "' (supported: linear, llama3)");
  }
}

// "model.layers.N.<suffix>" -> GGUF name, or throws for a tensor Strata does not know.
std::optional<std::string> gguf_tensor_name(const std::string& hf, int64_t n_layers,
                                            const std::string& label) {
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  static const std::pair<const char*, const char*> kLayer[] = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.o_proj.bias", "attn_output.bias"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.gate_proj.bias", "ffn_gate.bias"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.up_proj.bias", "ffn_up.bias"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
      {"mlp.down_proj.bias", "ffn_down.bias"},
  };
  const std::string prefix = "model.layers.";
  if (hf.rfind(prefix, 0) == 0) {
    size_t pos = prefix.size();
    int64_t layer = 0;
    const size_t digits_start = pos;
    while (pos < hf.size() && std::isdigit(static_cast<unsigned char>(hf[pos])) && pos - digits_start < 9)
      layer = layer * 10 + (hf[pos++] - '0');
    if (pos > digits_start && pos < hf.size() && hf[pos] == '.' && layer < n_layers) {
      const std::string suffix = hf.substr(pos + 1);
      if (suffix == "self_attn.rotary_emb.inv_freq") return std::nullopt;  // recomputed, never loaded
      for (const auto& [from, to] : kLayer)
        if (suffix == from) return concat("blk.", layer, ".", to);
    }
  }
  STRATA_THROW(label, ": unexpected tensor '", escape_for_message(hf), "'");
}

// Row permutation of q/k (weights [n_head * head_dim, n_in] or biases [n_head * head_dim]):
// within each head, new row 2*i+j takes old row j*(head_dim/2)+i.
void permute_rope_rows(const uint8_t* src, uint8_t* dst, int64_t n_rows, size_t row_bytes, int64_t head_dim) {
  const int64_t half = head_dim / 2;
  for (int64_t head = 0; head < n_rows / head_dim; ++head)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        const int64_t to = head * head_dim + 2 * i + j, from = head * head_dim + j * half + i;
        std::memcpy(dst + to * row_bytes, src + from * row_bytes, row_bytes);
      }
}

// Output order: token_embd, blocks by layer, output_norm, output.
std::pair<int, int64_t> tensor_rank(const std::string& gguf_name) {
  if (gguf_name == "token_embd.weight") return {0, 0};
  if (gguf_name.rfind("blk.", 0) == 0) return {1, std::strtoll(gguf_name.c_str() + 4, nullptr, 10)};
  return {gguf_name == "output_norm.weight" ? 2 : 3, 0};
}

struct HfConfig {
  Metadata md;
  bool tied = false;
  bool permute_qk = false;
  std::optional<QuantizedCheckpointConfig> quant;
};

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The packed tensors of a GPTQ/AWQ Linear ("X.qweight" + "X.qzeros", ...) are one matrix "X.weight";
// returns "X" for a name ending in one of their suffixes, else "".
std::string packed_linear_prefix(const std::string& hf) {
  for (std::string_view s : {".qweight", ".qzeros", ".scales", ".g_idx"})
    if (ends_with(hf, s)) return hf.substr(0, hf.size() - s.size());
  return "";
}

HfConfig parse_hf_config(const std::string& config_json, const std::string& name);

}  // namespace

bool is_hf_model_dir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::is_regular_file(fs::path(path) / "config.json", ec);
}

Metadata hf_config_metadata(const std::string& config_json, const std::string& name) {
  return parse_hf_config(config_json, name).md;
}

namespace {

HfConfig parse_hf_config(const std::string& config_json, const std::string& name) {
  const json c = json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (c.is_discarded() || !c.is_object()) STRATA_THROW(name, ": config.json is not a valid JSON object");
  const ArchInfo& a = find_arch(c, name);
  const std::string arch = a.arch;
  const int64_t hidden = positive_int(c, "hidden_size", name);
  const int64_t heads = positive_int(c, "num_attention_heads", name);
  const int64_t kv_heads = positive_int(c, "num_key_value_heads", name, heads);
  const bool explicit_head_dim = field(c, "head_dim") != nullptr;
  if (!explicit_head_dim && hidden % heads != 0)
    STRATA_THROW(name, ": hidden_size ", hidden, " is not a multiple of num_attention_heads ", heads);
  const int64_t head_dim = positive_int(c, "head_dim", name, hidden / heads);
  if (heads % kv_heads != 0 || head_dim % 2 != 0)
    STRATA_THROW(name, ": ", heads, " attention heads, ", kv_heads, " kv heads and head_dim ", head_dim,
                 " (heads must be a multiple of kv heads, head_dim even)");

  HfConfig cfg;
  Metadata& md = cfg.md;
  md.add("general.architecture", GgufValue::of_string(arch));
  const json* model_name = field(c, "_name_or_path");
  md.add("general.name",
         GgufValue::of_string(model_name && model_name->is_string() && !model_name->get<std::string>().empty()
                                  ? model_name->get<std::string>()
                                  : fs::path(name).filename().string()));
  md.add(arch + ".vocab_size", u32(positive_int(c, "vocab_size", name)));
  md.add(arch + ".context_length", u32(positive_int(c, "max_position_embeddings", name, a.default_context)));
  md.add(arch + ".embedding_length", u32(hidden));
  md.add(arch + ".feed_forward_length", u32(positive_int(c, "intermediate_size", name)));
  md.add(arch + ".block_count", u32(positive_int(c, "num_hidden_layers", name)));
  md.add(arch + ".attention.head_count", u32(heads));
  md.add(arch + ".attention.head_count_kv", u32(kv_heads));
  md.add(arch + ".attention.layer_norm_rms_epsilon", f32(number(c, "rms_norm_eps", name, 1e-6)));
  md.add(arch + ".rope.freq_base", f32(number(c, "rope_theta", name, 10000.0)));
  md.add(arch + ".rope.dimension_count", u32(head_dim));
  if (explicit_head_dim) {
    md.add(arch + ".attention.key_length", u32(head_dim));
    md.add(arch + ".attention.value_length", u32(head_dim));
  }
  if (arch == "mistral" && field(c, "sliding_window"))
    md.add("mistral.attention.sliding_window", u32(positive_int(c, "sliding_window", name)));
  add_rope_scaling(c, arch, name, md);
  const json* tied = field(c, "tie_word_embeddings");
  if (tied && !tied->is_boolean())
    STRATA_THROW(name, ": config.json \"tie_word_embeddings\" must be a boolean");
  cfg.tied = tied && tied->get<bool>();
  cfg.permute_qk = a.permute_qk;
  cfg.quant = parse_quantization_config(config_json, name);
  return cfg;
}

}  // namespace

std::unique_ptr<HfModelFile> HfModelFile::open(const std::string& dir) {
  if (!is_hf_model_dir(dir)) STRATA_THROW(dir, ": not a Hugging Face model directory (no config.json)");
  std::unique_ptr<HfModelFile> f(new HfModelFile());
  f->format_ = ModelFormat::HuggingFace;
  f->path_ = dir;
  HfConfig cfg = parse_hf_config(read_text_file((fs::path(dir) / "config.json").string()), dir);
  f->metadata_ = std::move(cfg.md);
  f->quant_ = cfg.quant;
  f->load_tensors(dir, cfg.tied, cfg.permute_qk);
  // A directory without tokenizer.json still converts (quantize), but cannot tokenize.
  if (fs::exists(fs::path(dir) / "tokenizer.json"))
    add_hf_tokenizer_metadata(dir, f->metadata_);
  else
    log_warn(dir, ": no tokenizer.json, the model has no tokenizer");
  return f;
}

// Which file holds each tensor: the index of a sharded checkpoint, else model.safetensors.
// Returns (HF tensor name, index into shards_).
std::vector<std::pair<std::string, size_t>> HfModelFile::open_shards(const std::string& dir) {
  std::vector<std::pair<std::string, size_t>> sources;
  const fs::path index_path = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(index_path)) {
    const json index = read_json_file(index_path.string());
    const json* map = field(index, "weight_map");
    if (!map || !map->is_object()) STRATA_THROW(index_path.string(), ": no \"weight_map\" object");
    std::map<std::string, size_t> shard_of_file;
    for (const auto& [tensor, file] : map->items()) {
      const std::string fname = file.is_string() ? file.get<std::string>() : "";
      if (fname.empty() || fname.find('/') != std::string::npos || fname == "." || fname == "..")
        STRATA_THROW(index_path.string(), ": tensor '", escape_for_message(tensor),
                     "' names an invalid shard file");
      auto [it, inserted] = shard_of_file.emplace(fname, shards_.size());
      if (inserted) shards_.push_back(SafetensorsFile::open((fs::path(dir) / fname).string()));
      sources.emplace_back(tensor, it->second);
    }
  } else {
    shards_.push_back(SafetensorsFile::open((fs::path(dir) / "model.safetensors").string()));
    for (const auto& t : shards_[0]->tensors()) sources.emplace_back(t.name, 0);
  }
  return sources;
}

namespace {

TensorInfo plain_tensor(const SafetensorsTensor& st, const std::string& label) {
  TensorInfo t;
  if (st.dtype == "F32")
    t.type = TensorType::F32;
  else if (st.dtype == "F16")
    t.type = TensorType::F16;
  else if (st.dtype == "BF16")
    t.type = TensorType::BF16;
  else
    STRATA_THROW(label, " has dtype ", st.dtype, " (supported: F32, F16, BF16)");
  if (st.shape.empty() || st.shape.size() > 4) STRATA_THROW(label, " has ", st.shape.size(), " dimensions");
  t.n_dims = static_cast<int>(st.shape.size());
  for (int d = 0; d < t.n_dims; ++d) t.ne[d] = st.shape[static_cast<size_t>(t.n_dims - 1 - d)];
  t.nbytes = st.nbytes;
  t.data = st.data;
  return t;
}

}  // namespace

// The matrix of a GPTQ/AWQ Linear `prefix` from its packed tensors, in a buffer of this file.
TensorInfo HfModelFile::packed_linear_tensor(const std::string& prefix,
                                             const std::map<std::string, size_t>& shard_of,
                                             const std::string& label) {
  const auto find = [&](const char* suffix) -> const SafetensorsTensor* {
    const auto it = shard_of.find(prefix + suffix);
    return it == shard_of.end() ? nullptr : shards_[it->second]->find(prefix + suffix);
  };
  PackedLinear p;
  p.qweight = find(".qweight");
  p.qzeros = find(".qzeros");
  p.scales = find(".scales");
  p.g_idx = find(".g_idx");
  const UnpackedLinear u =
      unpack_quantized_linear(*quant_, p, label, [this](size_t n) { return own_buffer(n); });
  TensorInfo t;
  t.type = u.type;
  t.n_dims = 2;
  t.ne = {u.n_in, u.n_out, 1, 1};
  t.data = u.data;
  t.nbytes = u.nbytes;
  return t;
}

void HfModelFile::load_tensors(const std::string& dir, bool tied, bool permute) {
  const std::string arch = *metadata_.get_string("general.architecture");
  const int64_t n_layers = *metadata_.get_int(arch + ".block_count");
  const int64_t heads = *metadata_.get_int(arch + ".attention.head_count");
  const int64_t kv_heads = *metadata_.get_int(arch + ".attention.head_count_kv");
  const int64_t head_dim = *metadata_.get_int(arch + ".rope.dimension_count");

  const std::vector<std::pair<std::string, size_t>> sources = open_shards(dir);
  const std::map<std::string, size_t> shard_of(sources.begin(), sources.end());
  const bool has_embed = shard_of.count("model.embed_tokens.weight") != 0;
  for (const auto& [hf_name, shard] : sources) {
    const SafetensorsFile& file = *shards_[shard];
    const SafetensorsTensor* st = file.find(hf_name);
    if (!st)
      STRATA_THROW(file.path(), ": lacks tensor '", escape_for_message(hf_name), "' listed in the index");
    // A GPTQ/AWQ Linear is loaded once, at its qweight, as the matrix "X.weight".
    const std::string packed = quant_ ? packed_linear_prefix(hf_name) : "";
    if (!packed.empty() && !ends_with(hf_name, ".qweight")) {
      if (!shard_of.count(packed + ".qweight"))
        STRATA_THROW(file.path(), ": tensor '", escape_for_message(hf_name), "' has no '",
                     escape_for_message(packed), ".qweight'");
      continue;
    }
    std::optional<std::string> name =
        gguf_tensor_name(packed.empty() ? hf_name : packed + ".weight", n_layers, file.path());
    if (!name) continue;
    if (*name == "output.weight" && tied) {
      if (has_embed) continue;
      name = "token_embd.weight";  // tied checkpoint saved with lm_head.weight as the only copy
    }
    const std::string label = concat(file.path(), ": tensor '", escape_for_message(hf_name), "'");
    TensorInfo t = packed.empty() ? plain_tensor(*st, label) : packed_linear_tensor(packed, shard_of, label);
    t.name = *name;

    const bool is_q = name->find(".attn_q.") != std::string::npos,
               is_k = name->find(".attn_k.") != std::string::npos;
    const size_t elem = type_traits(t.type).block_bytes;
    if (permute && (is_q || is_k)) {
      const int64_t n_rows = t.n_dims == 1 ? t.ne[0] : t.ne[1];
      const int64_t expect_rows = (is_q ? heads : kv_heads) * head_dim;
      if (t.n_dims > 2 || n_rows != expect_rows)
        STRATA_THROW(label, " has ", n_rows, " rows, expected ", expect_rows, " (heads x head_dim)");
      uint8_t* buf = own_buffer(t.nbytes);
      permute_rope_rows(static_cast<const uint8_t*>(t.data), buf, n_rows,
                        t.nbytes / static_cast<size_t>(n_rows), head_dim);
      t.data = buf;
    } else if (t.data == st->data && reinterpret_cast<uintptr_t>(t.data) % elem != 0) {
      uint8_t* buf = own_buffer(t.nbytes);
      std::memcpy(buf, st->data, t.nbytes);
      t.data = buf;
    }
    if (find_tensor(t.name)) STRATA_THROW(label, " maps to '", t.name, "', which is already loaded");
    tensors_.push_back(std::move(t));
  }
  if (!find_tensor("token_embd.weight"))
    STRATA_THROW(dir, ": no model.embed_tokens.weight (nor a tied lm_head.weight)");
  std::stable_sort(tensors_.begin(), tensors_.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return tensor_rank(a.name) < tensor_rank(b.name);
  });
}

}  // namespace strata
