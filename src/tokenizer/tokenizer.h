// Text <-> token ids, for SentencePiece-style and byte-level BPE vocabularies.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "formats/metadata.h"

namespace strata {

using TokenId = int32_t;

// Token attributes as GGUF's tokenizer.ggml.token_type.
enum class TokenKind : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // From GGUF-style metadata (tokenizer.ggml.model/tokens/scores/token_type/merges/pre, special
  // token ids, add_bos_token/add_eos_token, chat_template). Validates array types and lengths.
  // Throws strata::Error on a malformed vocabulary.
  static std::unique_ptr<Tokenizer> from_metadata(const Metadata& md);

  // add_special: add BOS/EOS as the vocabulary says (tokenizer.ggml.add_bos_token, ...).
  // parse_special: recognise control/unknown/user-defined token texts (e.g. "<|im_start|>") in
  // `text`. User-defined tokens are recognised even without it, as in llama.cpp and Hugging Face;
  // tokens llama.cpp knows by their text as end-of-turn/generation or fill-in-the-middle markers
  // count as control whatever the file says (special_token_rules.h).
  // Token ids match llama.cpp's llama_tokenize for GGUF vocabularies. Invalid UTF-8 is accepted
  // (SPM keeps the bytes as byte tokens; byte-level BPE sees U+FFFD, as llama.cpp does).
  virtual std::vector<TokenId> encode(std::string_view text, bool add_special, bool parse_special) const = 0;

  // Raw bytes of one token as it appears in text: byte tokens become their byte, "▁" a space,
  // byte-level BPE symbols are mapped back to bytes. Control tokens render as "" unless
  // `render_special` (then their text, e.g. "</s>"). May be a partial UTF-8 sequence.
  // Throws strata::Error for an id outside the vocabulary.
  virtual std::string token_to_piece(TokenId id, bool render_special = false) const = 0;

  // Concatenation of pieces. When adds_space_prefix(), a piece that directly follows BOS loses
  // one leading space (SentencePiece's dummy prefix; llama2.c and llama.cpp do the same).
  std::string decode(const std::vector<TokenId>& ids, bool render_special = false) const;

  virtual int32_t n_vocab() const = 0;
  virtual std::string_view token_text(TokenId id) const = 0;  // vocabulary string as stored
  virtual TokenKind token_kind(TokenId id) const = 0;
  virtual TokenId bos() const = 0;  // -1 if none
  virtual TokenId eos() const = 0;  // -1 if none
  virtual TokenId eot() const = 0;  // end of turn (<|eot_id|>, <|im_end|>, ...), -1 if none
  virtual TokenId unk() const = 0;  // -1 if none
  virtual bool add_bos() const = 0;
  virtual bool add_eos() const = 0;
  // End-of-generation: eos, eot, end_of_turn, <|im_end|>, ... (the engine stops on these).
  virtual bool is_eog(TokenId id) const = 0;
  // All end-of-generation tokens, ascending.
  virtual const std::vector<TokenId>& eog_tokens() const = 0;
  // The id of the token whose vocabulary text is exactly `text`, or -1.
  virtual TokenId find_token(std::string_view text) const = 0;
  // True when the vocabulary adds a dummy space prefix (SentencePiece "▁" convention).
  virtual bool adds_space_prefix() const = 0;
  // "llama" (SPM) or "gpt2" (byte-level BPE), as tokenizer.ggml.model.
  virtual std::string model_name() const = 0;
  // The model's chat template (tokenizer.chat_template) or "" when it has none.
  virtual const std::string& chat_template() const = 0;
};

// Turns a stream of token ids into text that is always valid UTF-8: a piece ending inside a
// multi-byte sequence is held back until the sequence completes; bytes that can never form
// valid UTF-8 are replaced by U+FFFD.
class StreamingDetokenizer {
 public:
  // after_bos: the first pushed token directly follows BOS (its leading dummy space is dropped
  // when the vocabulary adds one), e.g. generation from an empty prompt.
  StreamingDetokenizer(const Tokenizer& tok, bool after_bos, bool render_special = false);
  // Text that became complete with this token (possibly empty).
  std::string push(TokenId id);
  // Whatever is still held back, with incomplete sequences replaced by U+FFFD.
  std::string finish();

 private:
  const Tokenizer& tok_;
  bool render_special_;
  bool after_bos_;
  std::string pending_;
};

}  // namespace strata
