#include "tokenizer/special_token_rules.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <span>
#include <string_view>

namespace strata {
namespace {

using Texts = std::span<const std::string_view>;

// The texts by which llama.cpp's llama_vocab::impl::load recognises special tokens (its lists as
// of 2025, with the model each text was added for where llama.cpp names one).
constexpr std::string_view kEotTexts[] = {"<|eot_id|>",
                                          "<|im_end|>",
                                          "<|end|>",
                                          "<end_of_turn>",
                                          "<|endoftext|>",
                                          "<|end_of_text|>",
                                          "<EOT>",
                                          "_<EOT>",
                                          "[EOT]" /* Kimi-K2 */,
                                          "<｜end▁of▁sentence｜>" /* DeepSeek */,
                                          "<end_of_utterance>"};
constexpr std::string_view kEomTexts[] = {"<|eom_id|>"};
constexpr std::string_view kFimPreTexts[] = {"<|fim_prefix|>",  "<fim-prefix>", "<fim_prefix>",
                                             "<｜fim▁begin｜>", "<PRE>",        "▁<PRE>",
                                             "<|code_prefix|>", "<|prefix|>"};
constexpr std::string_view kFimSufTexts[] = {"<|fim_suffix|>",  "<fim-suffix>", "<fim_suffix>",
                                             "<｜fim▁hole｜>",  "<SUF>",        "▁<SUF>",
                                             "<|code_suffix|>", "<|suffix|>"};
constexpr std::string_view kFimMidTexts[] = {"<|fim_middle|>",  "<fim-middle>", "<fim_middle>",
                                             "<｜fim▁end｜>",   "<MID>",        "▁<MID>",
                                             "<|code_middle|>", "<|middle|>"};
constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
constexpr std::string_view kFimRepTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>",
                                             "<reponame>"};
constexpr std::string_view kFimSepTexts[] = {"<|file_sep|>"};
constexpr std::string_view kEogTexts[] = {"<|eot_id|>",
                                          "<|im_end|>",
                                          "<|end|>",
                                          "<|return|>" /* gpt-oss */,
                                          "<|call|>" /* gpt-oss */,
                                          "<|flush|>" /* solar-open */,
                                          "<|calls|>" /* solar-open */,
                                          "<end_of_turn>",
                                          "<|endoftext|>",
                                          "</s>" /* paddleocr */,
                                          "<|eom_id|>",
                                          "<EOT>",
                                          "_<EOT>",
                                          "[EOT]" /* Kimi-K2 */,
                                          "[EOS]" /* Kimi-K2 */,
                                          "<|end_of_text|>",
                                          "<end_of_utterance>" /* smoldocling */,
                                          "<eos>" /* gemma4 */,
                                          "<turn|>" /* gemma4 */,
                                          "<|tool_response>" /* gemma4 */,
                                          "<｜end▁of▁sentence｜>" /* deepseek-ocr */,
                                          "[e~[" /* minimax-m2 */};
// gpt-oss: always matched and printed, whatever the file says.
constexpr std::string_view kAlwaysUserDefined[] = {"<|channel|>", "<|message|>", "<|start|>",
                                                   "<|constrain|>"};

bool is_one_of(std::string_view s, Texts list) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

// The role's token: the metadata's when given, else the lowest id whose text is in the list.
// Either way a token found by its text becomes Control.
void detect_role(VocabData& v, TokenId& id, Texts texts) {
  if (id >= 0) return;
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (!is_one_of(v.tokens[i].text, texts)) continue;
    id = static_cast<TokenId>(i);
    v.tokens[i].kind = TokenKind::Control;
    return;
  }
}

TokenId eog_with_text(const VocabData& v, const std::set<TokenId>& eog, std::string_view text) {
  for (TokenId id : eog)
    if (v.tokens[static_cast<size_t>(id)].text == text) return id;
  return -1;
}

// Two exceptions llama.cpp makes to its end-of-generation texts: in the gpt-oss and solar-open
// formats "<|end|>" only ends a message (it stays matchable as user-defined text), and next to
// gemma4's "<|tool_response>" "</s>" is ordinary text.
void apply_eog_exceptions(VocabData& v, std::set<TokenId>& eog) {
  auto has = [&](std::string_view t) { return eog_with_text(v, eog, t) >= 0; };
  const TokenId end = eog_with_text(v, eog, "<|end|>");
  if (end >= 0 && ((has("<|return|>") && has("<|call|>")) || (has("<|calls|>") && has("<|flush|>")))) {
    eog.erase(end);
    v.tokens[static_cast<size_t>(end)].kind = TokenKind::UserDefined;
  }
  const TokenId s = eog_with_text(v, eog, "</s>");
  if (s >= 0 && has("<|tool_response>")) {
    eog.erase(s);
    v.tokens[static_cast<size_t>(s)].kind = TokenKind::Normal;
  }
}

}  // namespace

void apply_special_token_rules(VocabData& v) {
  detect_role(v, v.eot, kEotTexts);
  detect_role(v, v.eom, kEomTexts);
  detect_role(v, v.fim_pre, kFimPreTexts);
  detect_role(v, v.fim_suf, kFimSufTexts);
  detect_role(v, v.fim_mid, kFimMidTexts);
  detect_role(v, v.fim_pad, kFimPadTexts);
  detect_role(v, v.fim_rep, kFimRepTexts);
  detect_role(v, v.fim_sep, kFimSepTexts);

  std::set<TokenId> eog;
  for (TokenId id : {v.fim_pad, v.fim_rep, v.fim_sep})
    if (id >= 0) eog.insert(id);
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (!is_one_of(v.tokens[i].text, kEogTexts)) continue;
    eog.insert(static_cast<TokenId>(i));
    v.tokens[i].kind = TokenKind::Control;
  }
  for (VocabToken& t : v.tokens)
    if (is_one_of(t.text, kAlwaysUserDefined)) t.kind = TokenKind::UserDefined;
  for (TokenId id : {v.eos, v.eot, v.eom})
    if (id >= 0) eog.insert(id);
  apply_eog_exceptions(v, eog);
  v.eog.assign(eog.begin(), eog.end());
}

void apply_model_attributes(VocabData& v) {
  std::string name = v.general_name;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name.find("phi-3") == std::string::npos && name.find("phi3") == std::string::npos) return;
  for (VocabToken& t : v.tokens) {
    const bool special =
        t.kind == TokenKind::Control || t.kind == TokenKind::UserDefined || t.kind == TokenKind::Unknown;
    if (special || t.text == "</s>") t.rstrip = true;
    if (t.text == "<unk>" || t.text == "<s>" || t.text == "<|endoftext|>") t.rstrip = false;
  }
}

}  // namespace strata
