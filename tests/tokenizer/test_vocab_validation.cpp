// Malformed and hostile vocabularies: every problem is a strata::Error with a clear message,
// never a crash, and limits keep memory and time bounded.
#include <gtest/gtest.h>

#include "core/check.h"
#include "tokenizer_test_util.h"

namespace strata::test {
namespace {

HandVocab small_spm() {
  HandVocab v;
  v.tokens = {"<unk>", "<s>", "</s>", "a", "b", "ab"};
  v.scores = {0, 0, 0, 0, 0, -1};
  v.types = {2, 3, 3, 1, 1, 1};
  return v;
}

void expect_error(const Metadata& md, const std::string& fragment) {
  try {
    Tokenizer::from_metadata(md);
    ADD_FAILURE() << "no error, expected one mentioning '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(VocabValidation, RequiredKeysAndTypes) {
  expect_error(Metadata(), "tokenizer.ggml.model");
  Metadata md = small_spm().build();
  md.set("tokenizer.ggml.model", GgufValue::of_string("t5"));
  expect_error(md, "unsupported tokenizer model");
  md = small_spm().build();
  md.erase("tokenizer.ggml.tokens");
  expect_error(md, "tokenizer.ggml.tokens");
  md = small_spm().build();
  md.set("tokenizer.ggml.tokens", GgufValue::of_u32(3));
  expect_error(md, "tokenizer.ggml.tokens");
  GgufArray ints;
  ints.elem_type = GgufType::INT32;
  ints.i32 = {1, 2, 3};
  md.set("tokenizer.ggml.tokens", GgufValue::of_array(ints));
  expect_error(md, "expected strings");
  HandVocab empty = small_spm();
  empty.tokens.clear();
  empty.scores.clear();
  empty.types.clear();
  expect_error(empty.build(), "empty");
}

TEST(VocabValidation, ArrayLengthsMustAgree) {
  HandVocab v = small_spm();
  v.scores.pop_back();
  expect_error(v.build(), "scores");
  v = small_spm();
  v.types.push_back(1);
  expect_error(v.build(), "token_type");
  Metadata md = small_spm().build();
  GgufArray strs;
  strs.elem_type = GgufType::STRING;
  strs.strings = {"1", "2", "3", "4", "5", "6"};
  md.set("tokenizer.ggml.token_type", GgufValue::of_array(strs));
  expect_error(md, "integers");
  md = small_spm().build();
  GgufArray ints;
  ints.elem_type = GgufType::INT32;
  ints.i32 = {0, 0, 0, 0, 0, 0};
  md.set("tokenizer.ggml.scores", GgufValue::of_array(ints));
  expect_error(md, "f32");
}

TEST(VocabValidation, SpecialIdsMustBeInTheVocabulary) {
  Metadata md = small_spm().build();
  md.set("tokenizer.ggml.eos_token_id", GgufValue::of_u32(6));
  expect_error(md, "eos_token_id");
  md.set("tokenizer.ggml.eos_token_id", GgufValue::of_i32(-7));
  expect_error(md, "eos_token_id");
  md.set("tokenizer.ggml.eos_token_id", GgufValue::of_u64(uint64_t{1} << 40));
  expect_error(md, "eos_token_id");
  md.set("tokenizer.ggml.eos_token_id", GgufValue::of_string("2"));
  expect_error(md, "eos_token_id");
  // -1 / 0xFFFFFFFF mean "none" (llama.cpp's converter writes that for missing tokens).
  md.set("tokenizer.ggml.eos_token_id", GgufValue::of_u32(0xFFFFFFFFu));
  md.set("tokenizer.ggml.padding_token_id", GgufValue::of_i32(-1));
  const auto tok = Tokenizer::from_metadata(md);
  EXPECT_EQ(tok->eos(), -1);
  // Only "</s>" still ends generation: llama.cpp recognises it by its text.
  EXPECT_EQ(tok->eog_tokens(), (std::vector<TokenId>{2}));
}

TEST(VocabValidation, TokenLengthIsBounded) {
  HandVocab v = small_spm();
  v.tokens[5] = std::string(4097, 'x');
  expect_error(v.build(), "bytes long");
  v.tokens[5] = std::string(4096, 'x');  // at the limit: accepted
  EXPECT_NO_THROW(Tokenizer::from_metadata(v.build()));
}

TEST(VocabValidation, MergesMustBeWellFormed) {
  HandVocab v;
  v.model = "gpt2";
  v.tokens = {"a", "b", "ab"};
  expect_error(v.build(), "merges");
  for (const char* bad : {"ab", "a ", " ", "", "x"}) {
    v.merges = {"a b", bad};
    expect_error(v.build(), "merge 1");
  }
  // Merges of an SPM vocabulary (Hugging Face BPE) must name tokens.
  HandVocab s = small_spm();
  s.merges = {"a b", "b zz"};
  expect_error(s.build(), "merge 1");
  s.merges = {"a b"};
  Metadata md = s.build();
  md.add("tokenizer.ggml.add_space_prefix", GgufValue::of_bool(false));
  EXPECT_EQ(Tokenizer::from_metadata(md)->encode("ab", false, false), (std::vector<TokenId>{5}));
}

TEST(VocabValidation, OddButHarmlessVocabulariesWork) {
  // Empty and duplicate token texts, unknown token types: accepted like llama.cpp does.
  HandVocab v = small_spm();
  v.tokens = {"<unk>", "<s>", "</s>", "", "a", "a"};
  v.types = {2, 3, 3, 1, 1, 99};
  const auto tok = Tokenizer::from_metadata(v.build());
  EXPECT_EQ(tok->token_kind(5), TokenKind::Undefined);
  EXPECT_EQ(tok->find_token("a"), 5);  // the last duplicate wins, as in llama.cpp
  EXPECT_NO_THROW(tok->encode("a a", true, true));
  EXPECT_EQ(tok->token_to_piece(3), "");
}

}  // namespace
}  // namespace strata::test
