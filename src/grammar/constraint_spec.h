// What a request asks its output to match, compiled into a token constraint: a GBNF grammar,
// a JSON Schema, any JSON object, a regex or a choice among strings. Compiled grammars are
// kept in a small cache keyed by the request's text, so repeated schemas (the same tools or
// response format on every request) cost their compile once.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/expr.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_vocab.h"

namespace strata::grammar {

enum class ConstraintKind { Gbnf, JsonSchema, JsonObject, Regex, Choice, ToolCalls };

struct ConstraintSpec {
  ConstraintKind kind = ConstraintKind::JsonObject;
  std::string text;                  // Gbnf: grammar text; Regex: the pattern
  nlohmann::ordered_json schema;     // JsonSchema; ToolCalls: the spec of tool_call_grammar.h
  std::vector<std::string> choices;  // Choice

  std::string cache_key() const;
};

inline constexpr size_t kMaxChoices = 1u << 14;

// The grammar of a spec. Throws GrammarError for invalid input.
GrammarAst spec_grammar(const ConstraintSpec& spec);
// Parses, compiles and precomputes the token masks. Throws GrammarError.
std::shared_ptr<const GrammarConstraintFactory> compile_constraint(const ConstraintSpec& spec,
                                                                   std::shared_ptr<const TokenVocab> vocab);

// A least-recently-used cache of compiled constraints for one vocabulary; thread-safe.
// Compiling happens outside the lock, in the caller's thread.
class ConstraintCache {
 public:
  explicit ConstraintCache(std::shared_ptr<const TokenVocab> vocab, size_t capacity = 32)
      : vocab_(std::move(vocab)), capacity_(capacity) {}
  std::shared_ptr<const GrammarConstraintFactory> get(const ConstraintSpec& spec);
  const std::shared_ptr<const TokenVocab>& vocab() const { return vocab_; }

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const GrammarConstraintFactory>>;
  std::shared_ptr<const TokenVocab> vocab_;
  size_t capacity_;
  std::mutex mu_;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace strata::grammar
