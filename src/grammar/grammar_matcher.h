// The TokenConstraint of a compiled grammar: one Earley recognizer per sequence over the bytes
// of the accepted tokens, and allowed-token masks built from the per-state caches plus a
// trie-ordered check of the few context-dependent tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "grammar/earley.h"
#include "grammar/grammar.h"
#include "grammar/token_mask_cache.h"
#include "grammar/token_vocab.h"
#include "sampling/token_constraint.h"

namespace strata::grammar {

// A grammar with its token masks for one vocabulary; immutable, shared by every sequence.
class CompiledConstraint {
 public:
  CompiledConstraint(Grammar grammar, std::shared_ptr<const TokenVocab> vocab);
  const Grammar& grammar() const { return grammar_; }
  const TokenVocab& vocab() const { return *vocab_; }
  const TokenMaskCache& masks() const { return masks_; }

 private:
  Grammar grammar_;
  std::shared_ptr<const TokenVocab> vocab_;
  TokenMaskCache masks_;
};

class GrammarMatcher : public TokenConstraint {
 public:
  explicit GrammarMatcher(std::shared_ptr<const CompiledConstraint> compiled);

  void mask(uint8_t* allowed) override;
  bool accept(int32_t token) override;
  void rollback(int32_t n) override;
  bool is_complete() const override;
  bool can_continue() const override;

  // Whether `token` could be accepted now, by reading its bytes (the brute-force reference of
  // mask()); the state is unchanged.
  bool token_allowed(int32_t token);
  // Reads raw bytes (not a token); false and unchanged if they do not fit.
  bool accept_bytes(std::string_view bytes);
  int32_t n_accepted() const { return static_cast<int32_t>(history_.size()); }
  // Fewest bytes to a complete match (see EarleyParser::bytes_to_complete).
  int32_t bytes_to_complete(const std::vector<int32_t>& to_rule_end) const {
    return ended_ ? 0 : parser_.bytes_to_complete(to_rule_end);
  }
  // Of the last mask(): the states read from the cache and the tokens checked at run time.
  struct MaskStats {
    int32_t states = 0, checked = 0;
  };
  MaskStats last_mask_stats() const { return stats_; }

 private:
  void build_bitset();
  void check_uncertain();
  bool push_bytes(std::string_view bytes);

  std::shared_ptr<const CompiledConstraint> c_;
  EarleyParser parser_;
  struct Step {
    uint32_t n_sets;  // recognizer sets before the token
    bool eog;
  };
  std::vector<Step> history_;
  bool ended_ = false;  // an end-of-generation token was accepted
  // Scratch of mask().
  std::vector<int32_t> states_;
  std::vector<uint64_t> words_;  // [n_words] allowed bits
  std::vector<int32_t> uncertain_;
  MaskStats stats_;
};

class GrammarConstraintFactory : public TokenConstraintFactory {
 public:
  explicit GrammarConstraintFactory(std::shared_ptr<const CompiledConstraint> compiled)
      : compiled_(std::move(compiled)) {}
  std::unique_ptr<TokenConstraint> make() const override {
    return std::make_unique<GrammarMatcher>(compiled_);
  }
  const CompiledConstraint& compiled() const { return *compiled_; }

 private:
  std::shared_ptr<const CompiledConstraint> compiled_;
};

}  // namespace strata::grammar
