// Pre-tokenization of byte-level BPE: splits text into the words that merges never cross.
//
// Each tokenizer.ggml.pre value selects the list of split patterns llama.cpp applies in order;
// every pattern splits each current word into its matches and the text between them. The
// patterns are implemented as hand-written matchers over code points (see SplitRule) with the
// Unicode classes of unicode.h: \p{L}, \p{N}, \p{P} are the general categories and \s is the
// White_Space property.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

enum class SplitRule : uint8_t {
  Gpt2,                 // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  Llama3,               // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
                        //   ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  Qwen2,                // Llama3 with \p{N} (single digits) instead of \p{N}{1,3}
  PunctuationRun,       // [\p{P}\$\+<=>\^~\|]+
  PunctuationRunTick,   // [\p{P}\$\+<=>\^~\|`]+
  AsciiDigits3,         // [0-9][0-9][0-9]
  NumberRun,            // \p{N}+
  SingleNumber,         // \p{N}
  LineBreak,            // [\r\n]
  SpaceLetters,         // \s?\p{L}+
  SpacePunctuation,     // \s?\p{P}+
  DeepseekLetters,      // \s?[A-Za-zµÀ-ÖØ-öø-ƺ...]+ (the cased letters DeepSeek's tokenizer lists)
  DeepseekPunctuation,  // \s?[!-/:-~！-／：-～‘-‟　-。]+
  TrailingSpace,        // \s+$
  CjkRun,               // [一-龥ࠀ-一가-퟿]+
  BloomWords,           //  ?[^(\s|.,!?…。，、।۔،)]+
};

class PreTokenizer {
 public:
  // The split rules llama.cpp uses for `pre` (tokenizer.ggml.pre). Unknown or empty names get
  // the "default" rules, as in llama.cpp; `known` (when given) tells which case it was.
  static PreTokenizer for_name(std::string_view pre, bool* known = nullptr);
  explicit PreTokenizer(std::vector<SplitRule> rules) : rules_(std::move(rules)) {}

  // Splits `cps` ([n] code points) into words; returns the end offset of every word, in order
  // (the last one is n; empty when n == 0).
  std::vector<size_t> split(const std::vector<uint32_t>& cps) const;

  const std::vector<SplitRule>& rules() const { return rules_; }
  // llama.cpp's flags for the pre-tokenizer family: whole words found in the vocabulary skip
  // the merges (llama3 family) and a BOS is added by default.
  bool ignore_merges() const { return ignore_merges_; }
  bool default_add_bos() const { return default_add_bos_; }

 private:
  std::vector<SplitRule> rules_;
  bool ignore_merges_ = false;
  bool default_add_bos_ = false;
};

// The names for_name() recognises (for messages and tests).
const std::vector<std::string>& known_pre_tokenizer_names();

}  // namespace strata
