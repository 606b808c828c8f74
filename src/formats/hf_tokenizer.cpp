#include "formats/hf_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/check.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Types of tokenizer.ggml.token_type.
enum : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

// Largest id accepted from a tokenizer.json (keeps a hostile file from allocating gigabytes).
constexpr int64_t kMaxTokenId = int64_t{1} << 24;

std::optional<json> read_json(const fs::path& path, bool required) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (required) STRATA_THROW(path.string(), ": cannot open");
    return std::nullopt;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const json::exception& e) {
    STRATA_THROW(path.string(), ": invalid JSON (", e.what(), ")");
  }
}

const json* member(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string string_member(const json& j, const char* key) {
  const json* v = member(j, key);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

// A special token entry of tokenizer_config.json / special_tokens_map.json: "text" or
// {"content": "text", ...}.
std::string special_token_text(const json& cfg, const char* key) {
  const json* v = member(cfg, key);
  if (!v) return {};
  if (v->is_string()) return v->get<std::string>();
  return string_member(*v, "content");
}

struct HfVocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<bool> present;           // id defined by the model or added_tokens
  std::vector<bool> added, special;    // from added_tokens
  std::map<std::string, int32_t> ids;  // text -> id
};

void grow(HfVocab& v, int64_t id, const std::string& where) {
  if (id < 0 || id >= kMaxTokenId) STRATA_THROW(where, ": token id ", id, " out of range");
  if (static_cast<size_t>(id) >= v.tokens.size()) {
    const size_t n = static_cast<size_t>(id) + 1;
    v.tokens.resize(n);
    v.types.resize(n, kNormal);
    v.present.resize(n, false);
    v.added.resize(n, false);
    v.special.resize(n, false);
  }
}

HfVocab read_vocab(const json& tj, const std::string& where) {
  HfVocab v;
  const json* model = member(tj, "model");
  const json* vocab = model ? member(*model, "vocab") : nullptr;
  if (!vocab || !vocab->is_object()) STRATA_THROW(where, ": model.vocab is missing");
  for (const auto& [text, id] : vocab->items()) {
    if (!id.is_number_integer()) STRATA_THROW(where, ": vocab entry '", text, "' has no integer id");
    grow(v, id.get<int64_t>(), where);
    v.tokens[id.get<size_t>()] = text;
    v.present[id.get<size_t>()] = true;
  }
  if (const json* added = member(tj, "added_tokens"); added && added->is_array()) {
    for (const json& t : *added) {
      const json* id = member(t, "id");
      if (!id || !id->is_number_integer()) STRATA_THROW(where, ": added token without an integer id");
      grow(v, id->get<int64_t>(), where);
      const auto i = id->get<size_t>();
      v.tokens[i] = string_member(t, "content");
      v.present[i] = v.added[i] = true;
      const json* special = member(t, "special");
      v.special[i] = special && special->is_boolean() && special->get<bool>();
    }
  }
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (!v.present[i]) {
      v.tokens[i] = "[PAD" + std::to_string(i) + "]";
      v.types[i] = kUnused;
    }
    v.ids.emplace(v.tokens[i], static_cast<int32_t>(i));
  }
  return v;
}

// llama.cpp's converter treats these added tokens as control tokens even when tokenizer.json
// does not mark them special.
bool looks_special(const std::string& t) {
  const auto starts = [&](std::string_view p) { return t.rfind(p, 0) == 0; };
  const auto ends = [&](std::string_view s) {
    return t.size() >= s.size() && t.compare(t.size() - s.size(), s.size(), s) == 0;
  };
  if (t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]") return true;
  if (starts("<|") && ends("|>") && t.size() >= 4) return true;
  if (starts("<｜") && ends("｜>") && t.size() >= 8) return true;
  return starts("<unused") && ends(">");
}

std::vector<std::string> read_merges(const json& model, const std::string& where) {
  std::vector<std::string> merges;
  const json* m = member(model, "merges");
  if (!m) return merges;
  if (!m->is_array()) STRATA_THROW(where, ": model.merges is not an array");
  merges.reserve(m->size());
  for (const json& e : *m) {
    if (e.is_string())
      merges.push_back(e.get<std::string>());
    else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string())
      merges.push_back(e[0].get<std::string>() + " " + e[1].get<std::string>());
    else
      STRATA_THROW(where, ": malformed merge ", e.dump());
  }
  return merges;
}

// The pre-tokenizer steps of tokenizer.json as short signatures: ByteLevel(regex),
// Split(<pattern>), Digits(single|runs), Punctuation, ...
std::vector<std::string> pre_tokenizer_steps(const json* pre) {
  std::vector<std::string> steps;
  if (!pre) return steps;
  const std::string type = string_member(*pre, "type");
  if (type == "Sequence") {
    if (const json* list = member(*pre, "pretokenizers"); list && list->is_array())
      for (const json& p : *list)
        for (std::string& s : pre_tokenizer_steps(&p)) steps.push_back(std::move(s));
  } else if (type == "ByteLevel") {
    const json* re = member(*pre, "use_regex");
    steps.push_back(!re || (re->is_boolean() && re->get<bool>()) ? "ByteLevel(regex)" : "ByteLevel");
  } else if (type == "Split") {
    const json* pattern = member(*pre, "pattern");
    std::string p = pattern ? string_member(*pattern, "Regex") : "";
    if (p.empty() && pattern) p = string_member(*pattern, "String");
    steps.push_back("Split(" + p + ")");
  } else if (type == "Digits") {
    const json* single = member(*pre, "individual_digits");
    steps.push_back(single && single->is_boolean() && single->get<bool>() ? "Digits(single)"
                                                                          : "Digits(runs)");
  } else {
    steps.push_back(type);
  }
  return steps;
}

// The Split patterns of Llama 3 and Qwen2 tokenizer.json files.
const char* const kLlama3Pattern = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3})"
                                   R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2Pattern = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})"
                                  R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kCjkPattern = "[一-龥ࠀ-一가-퟿]+";

// tokenizer.ggml.pre for a byte-level BPE, recognised from its pre-tokenizer steps (llama.cpp
// hashes the tokenization of a test text instead, which needs the Python tokenizers library).
std::string detect_pre(const std::vector<std::string>& s, const std::string& where) {
  using V = std::vector<std::string>;
  if (s == V{"ByteLevel(regex)"}) return "gpt-2";
  if (s == V{"Split(" + std::string(kLlama3Pattern) + ")", "ByteLevel"}) return "llama-bpe";
  if (s == V{"Split(" + std::string(kQwen2Pattern) + ")", "ByteLevel"}) return "qwen2";
  if (s == V{"Digits(single)", "ByteLevel(regex)"}) return "starcoder";
  if (s == V{"Punctuation", "ByteLevel(regex)", "Digits(runs)", "Split([0-9][0-9][0-9])"}) return "falcon";
  const std::string cjk = "Split(" + std::string(kCjkPattern) + ")";
  if (s.size() == 7 && s[0] == "Split([\r\n])" && s[1].rfind("Split(\\s?[A-Za-zµÀ-Ö", 0) == 0 &&
      s[3] == "Split(\\s+$)" && s[4] == cjk && s[5] == "Digits(runs)" && s[6] == "ByteLevel")
    return "deepseek-llm";
  if (s == V{"Split([\r\n])", "Split(\\s?\\p{L}+)", "Split(\\s?\\p{P}+)", cjk, "Digits(single)", "ByteLevel"})
    return "deepseek-coder";
  std::string desc;
  for (const std::string& x : s) desc += (desc.empty() ? "" : ", ") + x;
  STRATA_THROW(where, ": unsupported byte-level pre-tokenizer [", desc, "]");
}

// Normalizer and pre-tokenizer of a SentencePiece-style BPE: only the "▁" conventions.
bool spm_adds_space_prefix(const json& tj, const std::string& where) {
  bool prefix = false;
  std::vector<const json*> normalizers;
  if (const json* n = member(tj, "normalizer")) {
    if (string_member(*n, "type") == "Sequence" && member(*n, "normalizers"))
      for (const json& x : *member(*n, "normalizers")) normalizers.push_back(&x);
    else
      normalizers.push_back(n);
  }
  for (const json* n : normalizers) {
    const std::string type = string_member(*n, "type");
    if (type == "Prepend" && string_member(*n, "prepend") == "\xE2\x96\x81")
      prefix = true;
    else if (type == "Replace" && member(*n, "pattern") &&
             string_member(*member(*n, "pattern"), "String") == " " &&
             string_member(*n, "content") == "\xE2\x96\x81")
      continue;
    else if (type != "NFC" && type != "NFKC")
      STRATA_THROW(where, ": unsupported normalizer '", type, "'");
  }
  if (const json* p = member(tj, "pre_tokenizer")) {
    if (string_member(*p, "type") != "Metaspace")
      STRATA_THROW(where, ": unsupported pre-tokenizer for a BPE model");
    if (const json* split = member(*p, "split"); split && split->is_boolean() && split->get<bool>())
      STRATA_THROW(where, ": Metaspace pre-tokenizer with split = true is not supported");
    const std::string scheme = string_member(*p, "prepend_scheme");
    const json* add = member(*p, "add_prefix_space");
    prefix = scheme.empty() ? (!add || (add->is_boolean() && add->get<bool>())) : scheme != "never";
  }
  return prefix;
}

GgufValue string_array(std::vector<std::string> v) {
  GgufArray a;
  a.elem_type = GgufType::STRING;
  a.strings = std::move(v);
  return GgufValue::of_array(std::move(a));
}

std::string read_chat_template(const fs::path& dir, const json& cfg) {
  if (const json* t = member(cfg, "chat_template")) {
    if (t->is_string()) return t->get<std::string>();
    if (t->is_array()) {
      for (const json& e : *t)
        if (string_member(e, "name") == "default") return string_member(e, "template");
      if (!t->empty()) return string_member((*t)[0], "template");
    }
  }
  std::ifstream in(dir / "chat_template.jinja", std::ios::binary);
  if (!in) return {};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// add_bos/add_eos implied by a TemplateProcessing post-processor (possibly inside a Sequence).
void template_flags(const json* pp, const std::string& bos, const std::string& eos,
                    std::optional<bool>& add_bos, std::optional<bool>& add_eos) {
  if (!pp) return;
  if (string_member(*pp, "type") == "Sequence" && member(*pp, "processors")) {
    for (const json& p : *member(*pp, "processors")) template_flags(&p, bos, eos, add_bos, add_eos);
    return;
  }
  const json* single = member(*pp, "single");
  if (string_member(*pp, "type") != "TemplateProcessing" || !single || !single->is_array() || single->empty())
    return;
  const auto special_id = [](const json& item) {
    const json* s = member(item, "SpecialToken");
    return s ? string_member(*s, "id") : std::string();
  };
  add_bos = !bos.empty() && special_id(single->front()) == bos;
  add_eos = !eos.empty() && special_id(single->back()) == eos;
}

// bos/eos/unk/pad texts: tokenizer_config.json, then special_tokens_map.json.
struct SpecialTexts {
  std::string bos, eos, unk, pad;
};

SpecialTexts special_texts(const json& cfg, const json& stm, const json& model) {
  const auto text = [&](const char* key) {
    std::string t = special_token_text(cfg, key);
    return t.empty() ? special_token_text(stm, key) : t;
  };
  SpecialTexts st{text("bos_token"), text("eos_token"), text("unk_token"), text("pad_token")};
  if (st.unk.empty()) st.unk = string_member(model, "unk_token");
  return st;
}

int64_t id_of(const HfVocab& v, const std::string& text) {
  const auto it = v.ids.find(text);
  return text.empty() || it == v.ids.end() ? -1 : it->second;
}

// SentencePiece-style BPE (e.g. Llama 2, TinyStories): "▁" for spaces, <0xNN> byte tokens.
// llama.cpp's converter writes no merges here and scores of -1000, so its SPM merging differs
// from the model's; the merges keep Strata identical to Hugging Face, and the scores (minus the
// merge rank) approximate that order for score-based readers.
void add_spm_keys(const json& tj, const std::vector<std::string>& merges, const SpecialTexts& st, HfVocab& v,
                  Metadata& md, const std::string& where) {
  std::vector<float> scores(v.tokens.size(), 0.0f);
  for (size_t rank = merges.size(); rank-- > 0;) {
    const std::string& m = merges[rank];
    const size_t sp = m.find(' ', 1);
    if (sp == std::string::npos) STRATA_THROW(where, ": malformed merge '", m, "'");
    const int64_t joined = id_of(v, m.substr(0, sp) + m.substr(sp + 1));
    if (joined >= 0) scores[joined] = -static_cast<float>(rank + 1);
  }
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const std::string& t = v.tokens[i];
    if (v.present[i] && !v.added[i] && t.size() == 6 && t.rfind("<0x", 0) == 0 && t[5] == '>')
      v.types[i] = kByte;
  }
  for (const std::string& s : {st.bos, st.eos, st.pad})
    if (const int64_t id = id_of(v, s); id >= 0) v.types[id] = kControl;
  if (const int64_t id = id_of(v, st.unk); id >= 0) v.types[id] = kUnknown;
  GgufArray sa;
  sa.elem_type = GgufType::FLOAT32;
  sa.f32 = std::move(scores);
  md.set("tokenizer.ggml.model", GgufValue::of_string("llama"));
  md.set("tokenizer.ggml.pre", GgufValue::of_string("default"));
  md.set("tokenizer.ggml.scores", GgufValue::of_array(std::move(sa)));
  md.set("tokenizer.ggml.add_space_prefix", GgufValue::of_bool(spm_adds_space_prefix(tj, where)));
}

// Special token ids (from their texts, else config.json's bos/eos_token_id), the add_bos/eos
// flags (tokenizer_config.json, else the post-processor template) and the chat template.
void add_special_keys(const fs::path& dir, const json& tj, const json& cfg, const SpecialTexts& st,
                      const HfVocab& v, Metadata& md) {
  const json model_cfg = read_json(dir / "config.json", false).value_or(json::object());
  const auto resolve = [&](const std::string& text, const char* config_key) {
    int64_t id = id_of(v, text);
    const json* c = config_key ? member(model_cfg, config_key) : nullptr;
    if (c && c->is_array() && !c->empty()) c = &(*c)[0];
    if (id < 0 && c && c->is_number_integer() && c->get<int64_t>() >= 0 &&
        c->get<int64_t>() < static_cast<int64_t>(v.tokens.size()))
      id = c->get<int64_t>();
    return id;
  };
  const int64_t bos_id = resolve(st.bos, "bos_token_id"), eos_id = resolve(st.eos, "eos_token_id");
  const auto set_id = [&](const char* key, int64_t id) {
    if (id >= 0) md.set(key, GgufValue::of_u32(static_cast<uint32_t>(id)));
  };
  set_id("tokenizer.ggml.bos_token_id", bos_id);
  set_id("tokenizer.ggml.eos_token_id", eos_id);
  set_id("tokenizer.ggml.unknown_token_id", id_of(v, st.unk));
  set_id("tokenizer.ggml.padding_token_id", id_of(v, st.pad));

  std::optional<bool> add_bos, add_eos;
  const auto text_of = [&](int64_t id) { return id >= 0 ? v.tokens[id] : std::string(); };
  template_flags(member(tj, "post_processor"), text_of(bos_id), text_of(eos_id), add_bos, add_eos);
  if (const json* b = member(cfg, "add_bos_token"); b && b->is_boolean()) add_bos = b->get<bool>();
  if (const json* e = member(cfg, "add_eos_token"); e && e->is_boolean()) add_eos = e->get<bool>();
  if (add_bos) md.set("tokenizer.ggml.add_bos_token", GgufValue::of_bool(*add_bos && bos_id >= 0));
  if (add_eos) md.set("tokenizer.ggml.add_eos_token", GgufValue::of_bool(*add_eos && eos_id >= 0));
  if (const std::string t = read_chat_template(dir, cfg); !t.empty())
    md.set("tokenizer.chat_template", GgufValue::of_string(t));
}

}  // namespace

void add_hf_tokenizer_metadata(const std::string& dir_name, Metadata& md) {
  const fs::path dir(dir_name);
  const std::string where = (dir / "tokenizer.json").string();
  const json tj = *read_json(dir / "tokenizer.json", true);
  const json cfg = read_json(dir / "tokenizer_config.json", false).value_or(json::object());
  const json stm = read_json(dir / "special_tokens_map.json", false).value_or(json::object());
  const json* model = member(tj, "model");
  if (!model || string_member(*model, "type") != "BPE")
    STRATA_THROW(where, ": unsupported tokenizer model '", model ? string_member(*model, "type") : "",
                 "' (BPE only)");
  if (member(*model, "continuing_subword_prefix") || member(*model, "end_of_word_suffix"))
    STRATA_THROW(where, ": BPE with subword prefixes/suffixes is not supported");

  HfVocab v = read_vocab(tj, where);
  std::vector<std::string> merges = read_merges(*model, where);
  const std::vector<std::string> steps = pre_tokenizer_steps(member(tj, "pre_tokenizer"));
  const bool byte_level =
      std::find(steps.begin(), steps.end(), "ByteLevel") != steps.end() ||
      std::find(steps.begin(), steps.end(), "ByteLevel(regex)") != steps.end() ||
      (member(tj, "decoder") && string_member(*member(tj, "decoder"), "type") == "ByteLevel");
  const SpecialTexts st = special_texts(cfg, stm, *model);

  // Added tokens: control when special (or looking like <|...|>), else user-defined.
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (v.present[i] && v.added[i])
      v.types[i] = v.special[i] || looks_special(v.tokens[i]) ? kControl : kUserDefined;
  if (byte_level) {
    md.set("tokenizer.ggml.model", GgufValue::of_string("gpt2"));
    md.set("tokenizer.ggml.pre", GgufValue::of_string(detect_pre(steps, where)));
  } else {
    add_spm_keys(tj, merges, st, v, md, where);
  }
  GgufArray types;
  types.elem_type = GgufType::INT32;
  types.i32 = v.types;
  md.set("tokenizer.ggml.tokens", string_array(v.tokens));
  md.set("tokenizer.ggml.token_type", GgufValue::of_array(std::move(types)));
  if (!merges.empty()) md.set("tokenizer.ggml.merges", string_array(std::move(merges)));
  add_special_keys(dir, tj, cfg, st, v, md);
}

}  // namespace strata
