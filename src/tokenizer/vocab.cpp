#include "tokenizer/vocab.h"

#include "core/check.h"
#include "core/log.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/special_token_rules.h"

namespace strata {
namespace {

const GgufArray& required_array(const Metadata& md, std::string_view key) {
  const GgufArray* a = md.get_array(key);
  if (!a) STRATA_THROW("tokenizer: metadata key '", key, "' is missing");
  return *a;
}

std::vector<std::string> read_token_texts(const Metadata& md) {
  const GgufArray& a = required_array(md, "tokenizer.ggml.tokens");
  if (a.elem_type != GgufType::STRING)
    STRATA_THROW("tokenizer: tokenizer.ggml.tokens has elements of type ", gguf_type_name(a.elem_type),
                 ", expected strings");
  if (a.strings.empty()) STRATA_THROW("tokenizer: tokenizer.ggml.tokens is empty");
  if (a.strings.size() > kMaxVocabSize)
    STRATA_THROW("tokenizer: ", a.strings.size(), " tokens is more than the supported ", kMaxVocabSize);
  for (size_t i = 0; i < a.strings.size(); ++i)
    if (a.strings[i].size() > kMaxTokenBytes)
      STRATA_THROW("tokenizer: token ", i, " is ", a.strings[i].size(), " bytes long (at most ",
                   kMaxTokenBytes, " supported)");
  return a.strings;
}

void read_scores(const Metadata& md, std::vector<VocabToken>& tokens) {
  const GgufArray* a = md.get_array("tokenizer.ggml.scores");
  if (!a) return;
  if (a->elem_type != GgufType::FLOAT32)
    STRATA_THROW("tokenizer: tokenizer.ggml.scores has elements of type ", gguf_type_name(a->elem_type),
                 ", expected f32");
  if (a->f32.size() != tokens.size())
    STRATA_THROW("tokenizer: tokenizer.ggml.scores has ", a->f32.size(), " entries for ", tokens.size(),
                 " tokens");
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i].score = a->f32[i];
}

void read_token_types(const Metadata& md, std::vector<VocabToken>& tokens) {
  const GgufArray* a = md.get_array("tokenizer.ggml.token_type");
  if (!a) return;
  if (a->size() != tokens.size())
    STRATA_THROW("tokenizer: tokenizer.ggml.token_type has ", a->size(), " entries for ", tokens.size(),
                 " tokens");
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::optional<int64_t> t;
    if (a->elem_type == GgufType::INT32)
      t = a->i32[i];
    else if (a->elem_type != GgufType::STRING && a->elem_type != GgufType::FLOAT32)
      t = a->values[i].as_int();
    if (!t) STRATA_THROW("tokenizer: tokenizer.ggml.token_type must hold integers");
    // Unknown type numbers are kept as Undefined, as llama.cpp does.
    tokens[i].kind = (*t >= 0 && *t <= 6) ? static_cast<TokenKind>(*t) : TokenKind::Undefined;
  }
}

std::vector<std::string> read_merges(const Metadata& md) {
  const GgufArray* a = md.get_array("tokenizer.ggml.merges");
  if (!a) return {};
  if (a->elem_type != GgufType::STRING)
    STRATA_THROW("tokenizer: tokenizer.ggml.merges has elements of type ", gguf_type_name(a->elem_type),
                 ", expected strings");
  if (a->strings.size() > kMaxMerges)
    STRATA_THROW("tokenizer: ", a->strings.size(), " merges is more than the supported ", kMaxMerges);
  for (size_t i = 0; i < a->strings.size(); ++i) {
    const std::string& m = a->strings[i];
    const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (sp == std::string::npos || sp + 1 >= m.size())
      STRATA_THROW("tokenizer: merge ", i, " is not two symbols separated by a space");
    if (m.size() > 2 * kMaxTokenBytes + 1) STRATA_THROW("tokenizer: merge ", i, " is too long");
  }
  return a->strings;
}

// A special token id: absent keeps `id`; -1 / 0xFFFFFFFF mean "none"; anything else must be a
// valid token.
void read_special_id(const Metadata& md, std::string_view key, size_t n_vocab, TokenId& id) {
  const std::optional<int64_t> v = md.get_int(key);
  if (!v) return;
  if (*v == -1 || *v == 0xFFFFFFFFll) {
    id = -1;
    return;
  }
  if (*v < 0 || static_cast<uint64_t>(*v) >= n_vocab)
    STRATA_THROW("tokenizer: ", key, " = ", *v, " is outside the vocabulary of ", n_vocab, " tokens");
  id = static_cast<TokenId>(*v);
}

}  // namespace

VocabData read_vocab(const Metadata& md) {
  VocabData v;
  v.model = md.string_or("tokenizer.ggml.model", "");
  if (v.model.empty()) STRATA_THROW("tokenizer: metadata key 'tokenizer.ggml.model' is missing");
  if (v.model != "llama" && v.model != "gpt2")
    STRATA_THROW("tokenizer: unsupported tokenizer model '", v.model, "' (supported: llama, gpt2)");
  v.pre = md.string_or("tokenizer.ggml.pre", "");
  v.general_name = md.string_or("general.name", "");
  v.chat_template = md.string_or("tokenizer.chat_template", "");

  std::vector<std::string> texts = read_token_texts(md);
  v.tokens.resize(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) v.tokens[i].text = std::move(texts[i]);
  read_scores(md, v.tokens);
  read_token_types(md, v.tokens);
  v.merges = read_merges(md);
  if (v.model == "gpt2" && v.merges.empty())
    STRATA_THROW("tokenizer: a gpt2 vocabulary needs tokenizer.ggml.merges");

  const size_t n = v.tokens.size();
  const bool spm = v.model == "llama";
  // llama.cpp's defaults: SPM vocabularies number <unk>, <s>, </s> first.
  if (spm) {
    v.unk = n > 0 ? 0 : -1;
    v.bos = n > 1 ? 1 : -1;
    v.eos = n > 2 ? 2 : -1;
    v.add_bos = true;
    v.add_space_prefix = true;
  } else {
    v.add_bos = PreTokenizer::for_name(v.pre).default_add_bos();
  }
  read_special_id(md, "tokenizer.ggml.bos_token_id", n, v.bos);
  read_special_id(md, "tokenizer.ggml.eos_token_id", n, v.eos);
  read_special_id(md, "tokenizer.ggml.eot_token_id", n, v.eot);
  read_special_id(md, "tokenizer.ggml.eom_token_id", n, v.eom);
  read_special_id(md, "tokenizer.ggml.unknown_token_id", n, v.unk);
  read_special_id(md, "tokenizer.ggml.padding_token_id", n, v.pad);
  read_special_id(md, "tokenizer.ggml.fim_pre_token_id", n, v.fim_pre);
  read_special_id(md, "tokenizer.ggml.fim_suf_token_id", n, v.fim_suf);
  read_special_id(md, "tokenizer.ggml.fim_mid_token_id", n, v.fim_mid);
  read_special_id(md, "tokenizer.ggml.fim_pad_token_id", n, v.fim_pad);
  read_special_id(md, "tokenizer.ggml.fim_rep_token_id", n, v.fim_rep);
  read_special_id(md, "tokenizer.ggml.fim_sep_token_id", n, v.fim_sep);
  read_special_id(md, "tokenizer.ggml.prefix_token_id", n, v.fim_pre);  // deprecated names, read
  read_special_id(md, "tokenizer.ggml.suffix_token_id", n, v.fim_suf);  // last as llama.cpp does
  read_special_id(md, "tokenizer.ggml.middle_token_id", n, v.fim_mid);
  v.add_bos = md.bool_or("tokenizer.ggml.add_bos_token", v.add_bos);
  v.add_eos = md.bool_or("tokenizer.ggml.add_eos_token", v.add_eos);
  v.add_space_prefix = md.bool_or("tokenizer.ggml.add_space_prefix", v.add_space_prefix);
  // llama.cpp would add a made-up default id here; without the token there is nothing to add.
  if (v.add_bos && v.bos < 0) {
    if (md.contains("tokenizer.ggml.add_bos_token"))
      log_warn("tokenizer: add_bos_token is set but there is no BOS");
    v.add_bos = false;
  }
  if (v.add_eos && v.eos < 0) {
    log_warn("tokenizer: add_eos_token is set but there is no EOS token");
    v.add_eos = false;
  }

  apply_special_token_rules(v);
  apply_model_attributes(v);
  return v;
}

}  // namespace strata
