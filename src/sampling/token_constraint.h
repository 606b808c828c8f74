// A constraint on which tokens may come next (structured output: grammars, JSON schemas,
// regexes, choices). The sampler asks for the allowed set before it samples; the engine
// advances the constraint only with tokens it has accepted, and rolls it back when speculative
// tokens are rejected.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace strata {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;

  // Clears allowed[t] for every token t that may not come next. allowed: [n_vocab], entries
  // 0 or 1, all 1 on entry. End-of-generation tokens are allowed exactly when is_complete().
  virtual void mask(uint8_t* allowed) = 0;
  // Advances by one token; returns false (state unchanged) if the token is not allowed.
  virtual bool accept(int32_t token) = 0;
  // Undoes the last n accepted tokens (n <= tokens accepted so far).
  virtual void rollback(int32_t n) = 0;
  // The text so far is a complete match: generation may stop here.
  virtual bool is_complete() const = 0;
  // Some non-end token can still follow (false: the match is complete and closed).
  virtual bool can_continue() const = 0;
};

// Makes one fresh constraint per sequence of a request (parallel choices each need their own).
class TokenConstraintFactory {
 public:
  virtual ~TokenConstraintFactory() = default;
  virtual std::unique_ptr<TokenConstraint> make() const = 0;
};

}  // namespace strata
