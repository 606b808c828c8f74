// A tokenizer vocabulary read from GGUF-style metadata (tokenizer.ggml.*), validated so that a
// hostile file gives a strata::Error instead of a crash, with llama.cpp's defaults applied.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/metadata.h"
#include "tokenizer/tokenizer.h"

namespace strata {

// Limits that keep a hostile vocabulary from costing unbounded time or memory.
inline constexpr size_t kMaxVocabSize = size_t{1} << 24;
inline constexpr size_t kMaxTokenBytes = 4096;
inline constexpr size_t kMaxMerges = size_t{1} << 25;

struct VocabToken {
  std::string text;
  float score = 0.0f;
  TokenKind kind = TokenKind::Normal;
  // Whitespace next to this special token is dropped when it is matched in text (llama.cpp's
  // per-model attributes, e.g. Phi-3).
  bool lstrip = false;
  bool rstrip = false;
};

struct VocabData {
  std::string model;  // "llama" or "gpt2"
  std::string pre;    // tokenizer.ggml.pre ("" when absent)
  std::vector<VocabToken> tokens;
  std::vector<std::string> merges;  // "left right", in rank order
  TokenId bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, pad = -1;
  // Fill-in-the-middle: prefix, suffix, middle, pad, repository name, file separator.
  TokenId fim_pre = -1, fim_suf = -1, fim_mid = -1, fim_pad = -1, fim_rep = -1, fim_sep = -1;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;
  std::string chat_template;
  std::string general_name;
  // End-of-generation tokens: eos, eot, eom and the tokens llama.cpp recognises by their text.
  std::vector<TokenId> eog;
};

// Reads and validates tokenizer.ggml.* (and tokenizer.chat_template, general.name). Applies
// the defaults of the model type (SPM: BOS 1, EOS 2, UNK 0, add BOS, add a space prefix) and
// llama.cpp's corrections of token types and attributes (special_token_rules.h).
// Throws strata::Error on a malformed or unsupported vocabulary.
VocabData read_vocab(const Metadata& md);

}  // namespace strata
