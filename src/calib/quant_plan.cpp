#include "calib/quant_plan.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "core/check.h"
#include "quant/quantize.h"

namespace strata::calib {
namespace {

// llama_ftype numbers.
enum Ftype : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ8_0 = 7,
  kQ5_0 = 8,
  kQ5_1 = 9,
  kQ2_K = 10,
  kQ3_K_S = 11,
  kQ3_K_M = 12,
  kQ3_K_L = 13,
  kQ4_K_S = 14,
  kQ4_K_M = 15,
  kQ5_K_S = 16,
  kQ5_K_M = 17,
  kQ6_K = 18,
  kIQ2_XXS = 19,
  kIQ2_XS = 20,
  kQ2_K_S = 21,
  kIQ3_XS = 22,
  kIQ3_XXS = 23,
  kIQ1_S = 24,
  kIQ4_NL = 25,
  kIQ3_S = 26,
  kIQ3_M = 27,
  kIQ2_S = 28,
  kIQ2_M = 29,
  kIQ4_XS = 30,
  kIQ1_M = 31,
  kBF16 = 32,
  kTQ1_0 = 36,
  kTQ2_0 = 37,
  kMXFP4_MOE = 38,
};

const std::vector<FileTypePreset>& presets() {
  using T = TensorType;
  static const std::vector<FileTypePreset> p = {
      {"F32", kF32, T::F32, false},           {"F16", kF16, T::F16, false},
      {"BF16", kBF16, T::BF16, false},        {"Q8_0", kQ8_0, T::Q8_0, false},
      {"Q4_0", kQ4_0, T::Q4_0, false},        {"Q4_1", kQ4_1, T::Q4_1, false},
      {"Q5_0", kQ5_0, T::Q5_0, false},        {"Q5_1", kQ5_1, T::Q5_1, false},
      {"Q2_K", kQ2_K, T::Q2_K, true},         {"Q2_K_S", kQ2_K_S, T::Q2_K, true},
      {"Q3_K_S", kQ3_K_S, T::Q3_K, true},     {"Q3_K_M", kQ3_K_M, T::Q3_K, true},
      {"Q3_K_L", kQ3_K_L, T::Q3_K, true},     {"Q3_K", kQ3_K_M, T::Q3_K, true},
      {"Q4_K_S", kQ4_K_S, T::Q4_K, true},     {"Q4_K_M", kQ4_K_M, T::Q4_K, true},
      {"Q4_K", kQ4_K_M, T::Q4_K, true},       {"Q5_K_S", kQ5_K_S, T::Q5_K, true},
      {"Q5_K_M", kQ5_K_M, T::Q5_K, true},     {"Q5_K", kQ5_K_M, T::Q5_K, true},
      {"Q6_K", kQ6_K, T::Q6_K, true},         {"IQ4_NL", kIQ4_NL, T::IQ4_NL, false},
      {"IQ4_XS", kIQ4_XS, T::IQ4_XS, false},  {"TQ1_0", kTQ1_0, T::TQ1_0, false},
      {"TQ2_0", kTQ2_0, T::TQ2_0, false},     {"MXFP4_MOE", kMXFP4_MOE, T::MXFP4, false},
      {"MXFP4", kMXFP4_MOE, T::MXFP4, false}, {"IQ2_XXS", kIQ2_XXS, T::IQ2_XXS, true},
      {"IQ2_XS", kIQ2_XS, T::IQ2_XS, true},   {"IQ2_S", kIQ2_S, T::IQ2_XS, true},
      {"IQ2_M", kIQ2_M, T::IQ2_S, true},      {"IQ3_XXS", kIQ3_XXS, T::IQ3_XXS, true},
      {"IQ3_XS", kIQ3_XS, T::IQ3_S, true},    {"IQ3_S", kIQ3_S, T::IQ3_S, true},
      {"IQ3_M", kIQ3_M, T::IQ3_S, true},      {"IQ1_S", kIQ1_S, T::IQ1_S, true},
      {"IQ1_M", kIQ1_M, T::IQ1_M, true},      {"COPY", kF32, T::F32, false, true},
  };
  return p;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

bool contains(const std::string& s, const char* part) {
  return s.find(part) != std::string::npos;
}

// llama.cpp's tensor categories.
enum class Category {
  TokenEmbd,
  AttnQ,
  AttnV,
  AttnK,
  AttnQkv,
  AttnKvB,
  AttnOutput,
  FfnUp,
  FfnGate,
  FfnDown,
  Output,
  Other
};

Category category_of(const std::string& name) {
  if (name == "output.weight") return Category::Output;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Category::TokenEmbd;
  if (contains(name, "attn_qkv.weight")) return Category::AttnQkv;
  if (contains(name, "attn_kv_b.weight")) return Category::AttnKvB;
  if (contains(name, "attn_v.weight")) return Category::AttnV;
  if (contains(name, "attn_k.weight")) return Category::AttnK;
  if (contains(name, "attn_q.weight")) return Category::AttnQ;
  if (contains(name, "attn_output.weight")) return Category::AttnOutput;
  if (contains(name, "ffn_up")) return Category::FfnUp;
  if (contains(name, "ffn_gate")) return Category::FfnGate;
  if (contains(name, "ffn_down")) return Category::FfnDown;
  return Category::Other;
}

bool is_attn_v_like(Category c) {
  return c == Category::AttnV || c == Category::AttnQkv || c == Category::AttnKvB;
}

bool allows_quantization(const TensorInfo& t) {
  if (t.n_dims < 2) return false;
  const std::string& n = t.name;
  if (n.size() < 6 || n.compare(n.size() - 6, 6, "weight") != 0) return false;
  for (const char* never :
       {"_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
        "per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "attn_rel_b.weight", "position_embd",
        "token_types", "time_mix_", "indexer.k_proj.weight", "indexer.q_proj.weight"})
    if (contains(n, never)) return false;
  return true;
}

struct Hparams {
  std::string arch;
  int64_t n_layer = 0, n_head = 0, n_head_kv = 0, n_expert = 0;
  int64_t n_gqa() const { return n_head_kv > 0 ? n_head / n_head_kv : 1; }
  bool is_70b() const { return arch == "llama" && n_layer == 80; }
};

Hparams read_hparams(const Metadata& md) {
  Hparams h;
  h.arch = md.string_or("general.architecture", "");
  const std::string a = h.arch + ".";
  h.n_layer = md.int_or(a + "block_count", 0);
  h.n_head = md.int_or(a + "attention.head_count", 0);
  h.n_head_kv = md.int_or(a + "attention.head_count_kv", h.n_head);
  h.n_expert = md.int_or(a + "expert_count", 0);
  return h;
}

// The 1-2-bit IQ file types, which share one set of rules in llama.cpp.
bool is_low_bit_iq(uint32_t ftype) {
  return ftype == kIQ2_XXS || ftype == kIQ2_XS || ftype == kIQ1_S || ftype == kIQ2_S || ftype == kIQ2_M ||
         ftype == kIQ1_M;
}

// llama_tensor_get_type_impl's mixture rules for the K-quant file types (and the output /
// token-embedding rules that apply to every file type).
struct MixtureState {
  const Hparams& hp;
  uint32_t ftype;
  bool tied = true;
  int n_attention_wv = 0, i_attention_wv = 0, i_ffn_down = 0, i_ffn_gate = 0, i_ffn_up = 0;

  static bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

  int layer_of(int counter, const std::string& name) const {
    if (hp.n_expert <= 1) return counter;
    int layer = -1;
    if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1 || layer < 0 || layer >= hp.n_layer)
      STRATA_THROW("cannot tell the layer of tensor '", name, "'");
    return layer;
  }

  TensorType pick(TensorType t, const TensorInfo& tensor, Category cat) {
    using T = TensorType;
    const int n_layer = static_cast<int>(hp.n_layer);
    if (cat == Category::Output || (tied && cat == Category::TokenEmbd)) {
      const int64_t qk = type_traits(t).block_size;
      if (ftype == kMXFP4_MOE) return T::Q8_0;
      if (hp.arch == "falcon" || tensor.ne[0] % qk != 0) return T::Q8_0;
      if (is_low_bit_iq(ftype) || ftype == kIQ3_XXS) return T::Q5_K;
      return t != T::Q8_0 ? T::Q6_K : t;
    }
    if (ftype == kMXFP4_MOE) return tensor.ne[2] > 1 ? T::MXFP4 : T::Q8_0;
    if (cat == Category::TokenEmbd) {
      if (ftype == kIQ2_XXS || ftype == kIQ2_XS || ftype == kIQ1_S || ftype == kIQ1_M) return T::Q2_K;
      if (ftype == kIQ2_S || ftype == kIQ2_M || ftype == kIQ3_XXS) return T::IQ3_S;
      if (ftype == kTQ1_0 || ftype == kTQ2_0) return T::Q4_K;
      return t;
    }
    if (is_low_bit_iq(ftype)) return pick_low_bit_iq(t, cat);
    if (is_attn_v_like(cat)) {
      if (ftype == kQ2_K)
        t = hp.n_gqa() >= 4 ? T::Q4_K : T::Q3_K;
      else if (ftype == kQ2_K_S && hp.n_gqa() >= 4)
        t = T::Q4_K;
      else if (ftype == kIQ3_XXS)
        t = hp.n_gqa() >= 4 ? T::Q4_K : !has_imatrix ? T::IQ3_S : T::IQ3_XXS;
      else if ((ftype == kIQ3_XS || ftype == kIQ3_S) && hp.n_gqa() >= 4)
        t = T::Q4_K;
      else if (ftype == kIQ3_M)
        t = T::Q4_K;
      else if (ftype == kQ3_K_M)
        t = i_attention_wv < 2 ? T::Q5_K : T::Q4_K;
      else if (ftype == kQ3_K_L)
        t = T::Q5_K;
      else if ((ftype == kIQ4_NL || ftype == kIQ4_XS) && hp.n_gqa() >= 4)
        t = T::Q5_K;
      else if ((ftype == kQ4_K_M || ftype == kQ5_K_M) && use_more_bits(i_attention_wv, n_attention_wv))
        t = T::Q6_K;
      else if (ftype == kQ4_K_S && i_attention_wv < 4)
        t = T::Q5_K;
      if (hp.is_70b() && (t == T::Q3_K || t == T::Q4_K)) t = T::Q5_K;
      if (hp.n_expert == 8) t = T::Q8_0;
      ++i_attention_wv;
      return t;
    }
    if (cat == Category::AttnK) {
      if (hp.n_expert == 8) return T::Q8_0;
      return ftype == kIQ3_XS ? T::IQ3_XXS : ftype == kIQ3_XXS ? T::IQ2_S : t;
    }
    if (cat == Category::AttnQ) return ftype == kIQ3_XS ? T::IQ3_XXS : ftype == kIQ3_XXS ? T::IQ2_S : t;
    if (cat == Category::FfnDown) {
      const int i = layer_of(i_ffn_down, tensor.name);
      ++i_ffn_down;
      if (ftype == kQ2_K) return T::Q3_K;
      if (ftype == kQ2_K_S) return i < n_layer / 8 ? T::Q4_K : t;
      if (ftype == kIQ3_XXS && !has_imatrix) return i < n_layer / 8 ? T::Q4_K : T::Q3_K;
      if (ftype == kQ3_K_M)
        return i < n_layer / 16                                   ? T::Q5_K
               : hp.arch != "falcon" || use_more_bits(i, n_layer) ? T::Q4_K
                                                                  : T::Q3_K;
      if (ftype == kIQ3_M && (i < n_layer / 8 || (hp.n_expert == 8 && use_more_bits(i, n_layer))))
        return T::Q4_K;
      if (ftype == kQ3_K_L) return hp.arch == "falcon" ? T::Q4_K : T::Q5_K;
      if (ftype == kQ4_K_M) {
        if (hp.arch == "falcon")
          return i < n_layer / 16 ? T::Q6_K : use_more_bits(i, n_layer) ? T::Q5_K : T::Q4_K;
        return use_more_bits(i, n_layer) ? T::Q6_K : t;
      }
      if (i < n_layer / 8 && (ftype == kIQ4_NL || ftype == kIQ4_XS) && !has_imatrix) return T::Q5_K;
      if (ftype == kQ5_K_M && use_more_bits(i, n_layer)) return T::Q6_K;
      if (ftype == kQ4_K_S && hp.arch != "falcon" && i < n_layer / 8) return T::Q5_K;
      if ((ftype == kQ4_0 || ftype == kQ5_0) && has_imatrix && i < n_layer / 8)
        return ftype == kQ4_0 ? T::Q4_1 : T::Q5_1;
      return t;
    }
    if (cat == Category::AttnOutput) {
      if (hp.arch != "falcon") {
        if (hp.n_expert == 8) {
          if (ftype == kQ2_K || ftype == kIQ3_XS || ftype == kIQ3_XXS || ftype == kQ3_K_S ||
              ftype == kQ3_K_M || ftype == kIQ4_NL || ftype == kQ4_K_S || ftype == kQ4_K_M ||
              ftype == kIQ3_S || ftype == kIQ3_M || ftype == kIQ4_XS)
            return T::Q5_K;
          return t;
        }
        if (ftype == kQ2_K) return T::Q3_K;
        if (ftype == kIQ3_XXS) return T::IQ3_S;
        if (ftype == kQ3_K_M || ftype == kIQ3_M) return T::Q4_K;
        if (ftype == kQ3_K_L) return T::Q5_K;
        return t;
      }
      return ftype == kQ3_K_L ? T::Q4_K : t;
    }
    if (cat == Category::AttnQkv) {
      if (ftype == kQ3_K_M || ftype == kQ3_K_L || ftype == kIQ3_M) return T::Q4_K;
      if (ftype == kQ4_K_M) return T::Q5_K;
      if (ftype == kQ5_K_M) return T::Q6_K;
      return t;
    }
    if (cat == Category::FfnGate || cat == Category::FfnUp) {
      int& counter = cat == Category::FfnGate ? i_ffn_gate : i_ffn_up;
      const int i = layer_of(counter, tensor.name);
      ++counter;
      if (ftype == kIQ3_XS && i >= n_layer / 8 && i < 7 * n_layer / 8) return T::IQ3_XXS;
    }
    return t;
  }

  // IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, IQ1_S, IQ1_M: more bits for attn_v, the first eighth of
  // ffn_down and attn_output.
  TensorType pick_low_bit_iq(TensorType t, Category cat) {
    using T = TensorType;
    const bool iq2_s_or_m = ftype == kIQ2_S || ftype == kIQ2_M;
    if (cat == Category::AttnV) {
      ++i_attention_wv;
      if (hp.n_gqa() >= 4 || hp.n_expert >= 4) return T::Q4_K;
      return iq2_s_or_m ? T::IQ3_S : T::Q2_K;
    }
    if (hp.n_expert == 8 && cat == Category::AttnK) return T::Q4_K;
    if (cat == Category::FfnDown) {
      const bool first = i_ffn_down < hp.n_layer / 8;
      ++i_ffn_down;
      return first ? (iq2_s_or_m ? T::IQ3_S : T::Q2_K) : t;
    }
    if (cat == Category::AttnOutput) {
      if (hp.n_expert == 8) return T::Q5_K;
      if (ftype == kIQ1_S || ftype == kIQ1_M) return T::IQ2_XXS;
      if (iq2_s_or_m) return T::IQ3_S;
    }
    return t;
  }

  bool has_imatrix = false;
};

void check_quantizable(TensorType t, const std::string& tensor) {
  if (!is_storage_type(t) || !can_quantize(t))
    STRATA_THROW("cannot quantize '", tensor, "' to ", type_name(t), ": Strata has no quantizer for it");
}

}  // namespace

const FileTypePreset* find_file_type(std::string_view name) {
  for (const FileTypePreset& p : presets())
    if (iequals(p.name, name)) return &p;
  if (!name.empty() &&
      std::all_of(name.begin(), name.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) &&
      name.size() < 4) {
    const auto n = static_cast<uint32_t>(std::stoul(std::string(name)));
    for (const FileTypePreset& p : presets())
      if (p.ftype == n && !p.copy) return &p;
  }
  return nullptr;
}

std::string file_type_names() {
  std::string s;
  for (const FileTypePreset& p : presets()) s += (s.empty() ? "" : " ") + p.name;
  return s;
}

TensorTypeOverride parse_tensor_type_override(const std::string& option) {
  const size_t eq = option.find('=');
  if (eq == std::string::npos) STRATA_THROW("malformed --tensor-type '", option, "' (use PATTERN=TYPE)");
  if (eq == 0) STRATA_THROW("--tensor-type '", option, "' has no tensor pattern");
  if (eq + 1 == option.size()) STRATA_THROW("--tensor-type '", option, "' has no type");
  TensorTypeOverride o;
  o.pattern = option.substr(0, eq);
  std::transform(o.pattern.begin(), o.pattern.end(), o.pattern.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::string type = option.substr(eq + 1);
  const auto t = tensor_type_from_name(type);
  if (!t || !is_storage_type(*t)) STRATA_THROW("--tensor-type '", option, "': unknown type '", type, "'");
  o.type = *t;
  try {
    o.regex = std::regex(o.pattern);
  } catch (const std::regex_error& e) {
    STRATA_THROW("--tensor-type '", option, "': bad pattern: ", e.what());
  }
  return o;
}

std::vector<TensorPlan> plan_tensor_types(const ModelFile& f, const PlanOptions& o) {
  STRATA_CHECK(o.preset != nullptr);
  const Hparams hp = read_hparams(f.metadata());
  std::vector<TensorPlan> plan(f.tensors().size());
  MixtureState mix{hp, o.preset->ftype};
  mix.has_imatrix = o.has_imatrix;
  for (const TensorInfo& t : f.tensors()) {
    if (is_attn_v_like(category_of(t.name))) ++mix.n_attention_wv;
    if (category_of(t.name) == Category::Output) mix.tied = false;
  }
  // llama.cpp walks its tensors in name order (a std::map): the layer counters follow it.
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < f.tensors().size(); ++i) by_name.emplace(f.tensors()[i].name, i);
  for (const auto& [name, i] : by_name) {
    const TensorInfo& t = f.tensors()[i];
    TensorPlan& p = plan[i];
    if (o.preset->copy || !allows_quantization(t)) {
      p.type = p.wanted = t.n_dims <= 1 && !o.preset->copy ? TensorType::F32 : t.type;
      continue;
    }
    p.quantized = true;
    const Category cat = category_of(t.name);
    TensorType type = o.preset->base;
    if (o.token_embedding_type && cat == Category::TokenEmbd) {
      type = *o.token_embedding_type;
    } else if (o.output_type && cat == Category::Output) {
      type = *o.output_type;
    } else if (type_traits(type).quantized) {
      bool manual = false;
      for (const TensorTypeOverride& ov : o.overrides)
        if (std::regex_search(t.name, ov.regex)) {
          type = ov.type;
          manual = true;
          break;
        }
      if (!manual && !o.pure) {
        // llama.cpp: the output rules apply to every quantized file type; the others only to
        // the K-quant mixtures (the legacy and IQ4 types have none besides ffn_down's guards).
        type = mix.pick(type, t, cat);
      }
    }
    p.wanted = type;
    check_quantizable(type, t.name);
    if (!o.has_imatrix && o.preset->ftype == kQ2_K_S && type == TensorType::Q2_K &&
        cat != Category::TokenEmbd && cat != Category::Output)
      STRATA_THROW(
          "Q2_K_S needs an importance matrix (--imatrix FILE or --calib-file TEXT), as in llama.cpp");
    // llama.cpp refuses these without an imatrix (IQ1_M only for the matrices other than
    // token_embd and output): "the result will be garbage".
    if (!o.has_imatrix && quantize_requires_imatrix(type) &&
        (type != TensorType::IQ1_M || (cat != Category::TokenEmbd && cat != Category::Output)))
      STRATA_THROW("missing importance matrix for tensor '", t.name, "' in a very low-bit quantization (",
                   type_name(type), "): give --imatrix FILE or --calib-file TEXT, as llama.cpp requires");
    p.type = fallback_type(type, t.ne[0]);
    p.fell_back = p.type != type;
  }
  return plan;
}

uint32_t planned_file_type(const ModelFile& f, const PlanOptions& o) {
  if (o.preset->copy) return static_cast<uint32_t>(f.metadata().int_or("general.file_type", 0));
  return o.preset->ftype;
}

}  // namespace strata::calib
