// Helpers shared by the grammar tests.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/constraint_spec.h"
#include "grammar/earley.h"
#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_vocab.h"

namespace strata::test {

grammar::Grammar compile_gbnf(const std::string& text);
// The whole of `s` is a match of the grammar.
bool full_match(const grammar::Grammar& g, std::string_view s);
// `s` can be read (it is a prefix of some match).
bool prefix_ok(const grammar::Grammar& g, std::string_view s);

// The vocabulary of a GGUF file under ../shared (e.g. "vocab/ggml-vocab-llama-spm.gguf").
std::shared_ptr<const grammar::TokenVocab> shared_vocab(const std::string& rel);

grammar::ConstraintSpec schema_spec(const nlohmann::ordered_json& schema);
grammar::ConstraintSpec gbnf_spec(const std::string& text);
grammar::ConstraintSpec regex_spec(const std::string& pattern);

// A random output of a constraint: up to `explore` uniformly random allowed tokens (stopping
// at a complete point with probability 1/4), then single-byte tokens chosen to bring the match
// nearest to completion (EarleyParser::bytes_to_complete) until it is complete.
struct Walk {
  std::vector<int32_t> tokens;
  std::string text;
  bool complete = false;
};
Walk random_walk(const grammar::GrammarConstraintFactory& f, uint64_t seed, int explore);
// The same over bytes, without a vocabulary: a random match of the grammar.
std::string random_match(const grammar::Grammar& g, uint64_t seed, int explore);

// Runs tests/grammar/validate_instances.py (Debian's python3-jsonschema) on
// [{"name", "schema", "instances": [text...]}]; returns its list of failures.
nlohmann::json validate_with_jsonschema(const nlohmann::json& cases);

// Runs `script` with Debian's python3, `input` on stdin; fails the test on a non-zero exit.
std::string python(const std::string& script, const std::string& input);

}  // namespace strata::test
