// The token matcher on real vocabularies: every mask equals the brute-force reference (each
// token's bytes fed to the recognizer from the current state), rollback restores exactly
// the earlier state, end-of-generation tokens are allowed exactly when the match is complete.
#include <gtest/gtest.h>

#include <random>

#include "common/fixtures.h"
#include "formats/gguf_reader.h"
#include "grammar_test_util.h"

namespace strata::test {
namespace {

using grammar::ConstraintSpec;
using grammar::GrammarMatcher;

const char* kJsonGbnf = R"g(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
)g";

std::vector<ConstraintSpec> specs() {
  ConstraintSpec json_object;
  json_object.kind = grammar::ConstraintKind::JsonObject;
  ConstraintSpec choice;
  choice.kind = grammar::ConstraintKind::Choice;
  choice.choices = {"yes", "no", "maybe not", "日本"};
  return {
      json_object,
      gbnf_spec(kJsonGbnf),
      gbnf_spec("root ::= (expr \"=\" ws term \"\\n\")+\nexpr ::= term ([-+*/] term)*\n"
                "term ::= ident | num | \"(\" ws expr \")\" ws\nident ::= [a-z] [a-z0-9_]* ws\n"
                "num ::= [0-9]+ ws\nws ::= [ \\t\\n]*\n"),
      schema_spec(nlohmann::ordered_json::parse(R"g({"type": "object", "properties": {
          "name": {"type": "string", "maxLength": 12}, "n": {"type": "integer", "minimum": -5, "maximum": 300},
          "tags": {"type": "array", "items": {"enum": ["a b", "c\"d", "é"]}, "maxItems": 3},
          "when": {"type": "string", "format": "date-time"}, "mail": {"type": "string", "format": "email"}},
          "required": ["name", "n"]})g")),
      regex_spec("[A-Z][a-z]{1,8}( [A-Z][a-z]{1,8}){0,2}, [0-9]{2,5}!?"),
      choice,
  };
}

// Every token of the vocabulary: mask() against token_allowed().
void expect_mask_is_exact(GrammarMatcher& m, const grammar::TokenVocab& v, const std::string& where) {
  std::vector<uint8_t> allowed(static_cast<size_t>(v.n_vocab()), 1);
  m.mask(allowed.data());
  int mismatches = 0;
  for (int32_t t = 0; t < v.n_vocab(); ++t) {
    if (allowed[static_cast<size_t>(t)] != m.token_allowed(t) && ++mismatches <= 5)
      ADD_FAILURE() << where << ": token " << t << " '" << v.piece(t) << "' mask "
                    << int(allowed[static_cast<size_t>(t)]);
  }
  EXPECT_EQ(mismatches, 0) << where;
}

void check_masks(const std::string& vocab_path, int walks) {
  const auto vocab = shared_vocab(vocab_path);
  std::mt19937_64 rng(11);
  size_t spec_index = 0;
  for (const ConstraintSpec& spec : specs()) {
    const auto f = grammar::compile_constraint(spec, vocab);
    for (int w = 0; w < walks; ++w) {
      const Walk walk = random_walk(*f, rng(), 4 + 6 * w);
      auto m = f->make();
      auto& gm = static_cast<GrammarMatcher&>(*m);
      for (size_t i = 0; i <= walk.tokens.size(); ++i) {
        expect_mask_is_exact(gm, *vocab,
                             vocab_path + " spec " + std::to_string(spec_index) + " after '" +
                                 walk.text.substr(0, 80) + "' step " + std::to_string(i));
        if (i < walk.tokens.size()) {
          ASSERT_TRUE(m->accept(walk.tokens[i]));
        }
      }
      EXPECT_TRUE(m->is_complete());
    }
    ++spec_index;
  }
}

TEST(Matcher, MasksEqualBruteForceLlamaSpm) {
  check_masks("vocab/ggml-vocab-llama-spm.gguf", 2);
}
TEST(Matcher, MasksEqualBruteForceGpt2) {
  check_masks("vocab/ggml-vocab-gpt-2.gguf", 1);
}
TEST(Matcher, MasksEqualBruteForceStories) {
  check_masks("models/stories260K/stories260K.gguf", 3);
}

TEST(Matcher, EndOfGenerationExactlyWhenComplete) {
  const auto vocab = shared_vocab("vocab/ggml-vocab-llama-spm.gguf");
  ASSERT_FALSE(vocab->eog().empty());
  const int32_t eos = vocab->eog()[0];
  ConstraintSpec spec = regex_spec("ab(cd)?");
  const auto f = grammar::compile_constraint(spec, vocab);
  auto m = f->make();
  auto& gm = static_cast<GrammarMatcher&>(*m);
  std::vector<uint8_t> allowed(static_cast<size_t>(vocab->n_vocab()), 1);
  auto eos_allowed = [&] {
    std::fill(allowed.begin(), allowed.end(), 1);
    m->mask(allowed.data());
    return allowed[static_cast<size_t>(eos)] == 1;
  };
  EXPECT_FALSE(eos_allowed());
  EXPECT_FALSE(m->accept(eos));
  ASSERT_TRUE(gm.accept_bytes("ab"));
  EXPECT_TRUE(m->is_complete());
  EXPECT_TRUE(m->can_continue());
  EXPECT_TRUE(eos_allowed());
  ASSERT_TRUE(gm.accept_bytes("cd"));
  EXPECT_TRUE(m->is_complete());
  EXPECT_FALSE(m->can_continue());
  EXPECT_TRUE(eos_allowed());
  // Only the end is left: no text token is allowed.
  int text_allowed = 0;
  for (int32_t t = 0; t < vocab->n_vocab(); ++t)
    text_allowed += allowed[static_cast<size_t>(t)] && !vocab->is_eog(t);
  EXPECT_EQ(text_allowed, 0);
  EXPECT_TRUE(m->accept(eos));
  EXPECT_FALSE(m->can_continue());
  // After the end nothing more is accepted; rolling the end back reopens.
  EXPECT_FALSE(m->accept(eos));
  m->rollback(1);
  EXPECT_TRUE(eos_allowed());
}

TEST(Matcher, RejectedTokensLeaveTheStateUnchanged) {
  const auto vocab = shared_vocab("vocab/ggml-vocab-llama-spm.gguf");
  const auto f = grammar::compile_constraint(regex_spec("[0-9]+x"), vocab);
  auto m = f->make();
  auto& gm = static_cast<GrammarMatcher&>(*m);
  int32_t letter = -1, digit = -1;
  for (int32_t t = 0; t < vocab->n_vocab(); ++t) {
    if (vocab->piece(t) == "ab") letter = t;
    if (vocab->piece(t) == "1") digit = t;
  }
  ASSERT_GE(letter, 0);
  ASSERT_GE(digit, 0);
  EXPECT_FALSE(m->accept(letter));
  EXPECT_EQ(gm.n_accepted(), 0);
  EXPECT_TRUE(m->accept(digit));
  EXPECT_FALSE(m->accept(letter));
  EXPECT_EQ(gm.n_accepted(), 1);
  EXPECT_TRUE(gm.accept_bytes("3x"));
  EXPECT_TRUE(m->is_complete());
}

// Rolling back k tokens gives the state of a fresh matcher fed the first n - k tokens, as
// speculative decoding needs when drafts are rejected.
TEST(Matcher, RollbackEqualsReplay) {
  const auto vocab = shared_vocab("vocab/ggml-vocab-llama-spm.gguf");
  std::mt19937_64 rng(5);
  for (const ConstraintSpec& spec : specs()) {
    const auto f = grammar::compile_constraint(spec, vocab);
    const Walk walk = random_walk(*f, rng(), 25);
    auto m = f->make();
    for (int32_t t : walk.tokens) ASSERT_TRUE(m->accept(t));
    size_t n = walk.tokens.size();
    while (n > 0) {
      const size_t k = std::min<size_t>(n, 1 + rng() % 3);
      m->rollback(static_cast<int32_t>(k));
      n -= k;
      auto fresh = f->make();
      for (size_t i = 0; i < n; ++i) ASSERT_TRUE(fresh->accept(walk.tokens[i]));
      std::vector<uint8_t> a(static_cast<size_t>(vocab->n_vocab()), 1), b = a;
      m->mask(a.data());
      fresh->mask(b.data());
      EXPECT_EQ(a, b) << "after rolling back to " << n << " tokens";
      EXPECT_EQ(m->is_complete(), fresh->is_complete());
      EXPECT_EQ(m->can_continue(), fresh->can_continue());
      // And forward again: the same tokens are accepted.
      if (n < walk.tokens.size() && rng() % 2) {
        ASSERT_TRUE(m->accept(walk.tokens[n]));
        m->rollback(1);
      }
    }
  }
}

// Models whose output has more rows than the tokenizer has tokens: the extra ids are never
// allowed (the mask is as long as the model's vocabulary).
TEST(Matcher, PaddedVocabularyRowsAreNeverAllowed) {
  const auto file = GgufFile::open(shared_path("models/stories260K/stories260K.gguf"));
  const auto tok = Tokenizer::from_metadata(file->metadata());
  const auto vocab = grammar::TokenVocab::from_tokenizer(*tok, tok->n_vocab() + 7);
  ASSERT_EQ(vocab->n_vocab(), tok->n_vocab() + 7);
  ConstraintSpec any;
  any.kind = grammar::ConstraintKind::JsonObject;
  const auto f = grammar::compile_constraint(any, vocab);
  auto m = f->make();
  static_cast<GrammarMatcher&>(*m).accept_bytes("{\"a\": \"");
  std::vector<uint8_t> allowed(static_cast<size_t>(vocab->n_vocab()), 1);
  m->mask(allowed.data());
  for (int32_t t = tok->n_vocab(); t < vocab->n_vocab(); ++t)
    EXPECT_EQ(allowed[static_cast<size_t>(t)], 0) << t;
  EXPECT_FALSE(m->accept(tok->n_vocab()));
}

TEST(Matcher, SequencesOfOneFactoryAreIndependent) {
  const auto vocab = shared_vocab("models/stories260K/stories260K.gguf");
  const auto f = grammar::compile_constraint(regex_spec("(ab|cd)+"), vocab);
  auto a = f->make(), b = f->make();
  auto& ga = static_cast<GrammarMatcher&>(*a);
  auto& gb = static_cast<GrammarMatcher&>(*b);
  ASSERT_TRUE(ga.accept_bytes("ab"));
  EXPECT_FALSE(gb.is_complete());
  ASSERT_TRUE(gb.accept_bytes("cdab"));
  EXPECT_TRUE(ga.is_complete());
  EXPECT_TRUE(gb.is_complete());
}

}  // namespace
}  // namespace strata::test
