// SPM and byte-level BPE on small hand-made vocabularies, with expected ids worked out by hand
// from the algorithms' definitions (llama.cpp's SPM and BPE, special-token partition).
#include <gtest/gtest.h>

#include "core/check.h"
#include "tokenizer_test_util.h"

namespace strata::test {
namespace {

using Ids = std::vector<TokenId>;

// 0 <unk>, 1 <s>, 2 </s>, 3 ▁, 4 a, 5 b, 6 c, 7 ▁a, 8 ab, 9 ▁ab, 10 bc, 11 <0xC3>, 12 <0xA9>,
// 13 <|im_end|>, 14 <tool>, 15 AB, 16 BCD
HandVocab spm_vocab() {
  HandVocab v;
  v.tokens = {"<unk>",
              "<s>",
              "</s>",
              "\xE2\x96\x81",
              "a",
              "b",
              "c",
              "\xE2\x96\x81"
              "a",
              "ab",
              "\xE2\x96\x81"
              "ab",
              "bc",
              "<0xC3>",
              "<0xA9>",
              "<|im_end|>",
              "<tool>",
              "AB",
              "BCD"};
  v.scores = {0, 0, 0, 0, 0, 0, 0, -1.0f, -2.0f, -0.5f, -0.1f, 0, 0, 0, 0, 0, 0};
  v.types = {2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6, 6, 1, 4, 4, 4};
  return v;
}

std::unique_ptr<Tokenizer> make(const Metadata& md) {
  return Tokenizer::from_metadata(md);
}

TEST(SpmTokenizer, JoinsTheBestScoringPairFirst) {
  const auto tok = make(spm_vocab().build());
  // "▁ab": "▁a" (-1) beats "ab" (-2); then "▁ab" (-0.5).
  EXPECT_EQ(tok->encode("ab", false, false), (Ids{9}));
  // "▁abc": "bc" (-0.1) first, then "▁a"; "▁abc" is no token.
  EXPECT_EQ(tok->encode("abc", false, false), (Ids{7, 10}));
  // Spaces are "▁": "▁a▁b" -> "▁a" then "▁", "b".
  EXPECT_EQ(tok->encode("a b", false, false), (Ids{7, 3, 5}));
  EXPECT_EQ(tok->encode("", false, false), (Ids{}));
}

TEST(SpmTokenizer, ByteFallback) {
  const auto tok = make(spm_vocab().build());
  EXPECT_EQ(tok->encode("\xC3\xA9", false, false), (Ids{3, 11, 12}));  // é: both bytes have tokens
  EXPECT_EQ(tok->encode("\xC3\xBC", false, false), (Ids{3, 11, 0}));   // ü: 0xBC has none -> <unk>
  EXPECT_EQ(tok->token_to_piece(11), "\xC3");
}

TEST(SpmTokenizer, SpecialTokensAndFlags) {
  HandVocab v = spm_vocab();
  auto md = v.build();
  auto tok = make(md);
  EXPECT_EQ(tok->encode("ab", true, false), (Ids{1, 9}));  // SPM adds BOS by default
  EXPECT_EQ(tok->encode("", true, false), (Ids{1}));
  md.set("tokenizer.ggml.add_eos_token", GgufValue::of_bool(true));
  md.set("tokenizer.ggml.add_space_prefix", GgufValue::of_bool(false));
  tok = make(md);
  EXPECT_EQ(tok->encode("ab", true, false), (Ids{1, 8, 2}));
  EXPECT_FALSE(tok->adds_space_prefix());
}

TEST(SpmTokenizer, ControlTokensOnlyWithParseSpecial) {
  const auto tok = make(spm_vocab().build());
  // After a special token the next text gets the dummy prefix again.
  EXPECT_EQ(tok->encode("a<|im_end|>b", false, true), (Ids{7, 13, 3, 5}));
  for (TokenId id : tok->encode("a<|im_end|>b", false, false)) EXPECT_NE(id, 13);
  // User-defined tokens are split out either way.
  EXPECT_EQ(tok->encode("a<tool>", false, false), (Ids{7, 14}));
  // Longest token first: "BCD" claims its text before "AB" is tried, as in llama.cpp.
  EXPECT_EQ(tok->encode("ABCD", false, false), (Ids{3, 0, 16}));
}

TEST(SpmTokenizer, Phi3SpecialTokensEatFollowingSpaces) {
  HandVocab v = spm_vocab();
  Metadata md = v.build();
  EXPECT_EQ(make(md)->encode("a<tool>  b", false, false), (Ids{7, 14, 3, 3, 3, 5}));
  md.add("general.name", GgufValue::of_string("Phi3"));
  EXPECT_EQ(make(md)->encode("a<tool>  b", false, false), (Ids{7, 14, 3, 5}));
}

TEST(SpmTokenizer, EndOfGenerationTokens) {
  const auto tok = make(spm_vocab().build());
  EXPECT_EQ(tok->eos(), 2);
  EXPECT_EQ(tok->eot(), 13);  // recognised by its text, and made a control token
  EXPECT_EQ(tok->token_kind(13), TokenKind::Control);
  EXPECT_EQ(tok->eog_tokens(), (Ids{2, 13}));
  EXPECT_TRUE(tok->is_eog(13));
  EXPECT_FALSE(tok->is_eog(1));
  EXPECT_FALSE(tok->is_eog(-1));
  EXPECT_FALSE(tok->is_eog(1000));
  EXPECT_EQ(tok->find_token("bc"), 10);
  EXPECT_EQ(tok->find_token("zz"), -1);
}

TEST(SpmTokenizer, PiecesAndDecode) {
  const auto tok = make(spm_vocab().build());
  EXPECT_EQ(tok->token_to_piece(9), " ab");
  EXPECT_EQ(tok->token_to_piece(1), "");
  EXPECT_EQ(tok->token_to_piece(1, true), "<s>");
  EXPECT_EQ(tok->token_to_piece(0), "");
  EXPECT_EQ(tok->token_to_piece(14), "<tool>");
  EXPECT_EQ(tok->decode({1, 9, 3, 5}), "ab b");  // the dummy space after BOS is dropped
  EXPECT_EQ(tok->decode({9, 3, 5}), " ab b");
  EXPECT_EQ(tok->decode({1, 9}, true), "<s>ab");
  EXPECT_THROW(tok->token_to_piece(17), Error);
  EXPECT_THROW(tok->token_to_piece(-1), Error);
}

// Byte-level: 0 a, 1 b, 2 c, 3 ab, 4 Ġ, 5 ca, 6 !, 7 <|endoftext|>; merges "a b", "ab c" (whose
// result "abc" is no token).
HandVocab bpe_vocab(const std::string& pre) {
  HandVocab v;
  v.model = "gpt2";
  v.pre = pre;
  v.tokens = {"a", "b", "c", "ab", "\xC4\xA0", "ca", "!", "<|endoftext|>"};
  v.merges = {"a b", "ab c"};
  v.types = {1, 1, 1, 1, 1, 1, 1, 3};
  return v;
}

TEST(BpeTokenizer, MergesByRankAndFallsBackToBytes) {
  const auto tok = make(bpe_vocab("gpt-2").build());
  // "ab c" makes "abc", which is no token: llama.cpp then emits the symbol's characters.
  EXPECT_EQ(tok->encode("abc", false, false), (Ids{0, 1, 2}));
  EXPECT_EQ(tok->encode("ab!", false, false), (Ids{3, 6}));
  EXPECT_EQ(tok->encode("ca", false, false), (Ids{2, 0}));  // no merge makes "ca"
  // " a": the space is "Ġ" and a word of its own only before a non-letter.
  EXPECT_EQ(tok->encode("ab a", false, false), (Ids{3, 4, 0}));
  EXPECT_EQ(tok->decode({3, 4, 0}), "ab a");
  EXPECT_FALSE(tok->add_bos());
  EXPECT_EQ(tok->eot(), 7);
}

TEST(BpeTokenizer, Llama3FamilyLooksUpWholeWords) {
  const auto tok = make(bpe_vocab("llama-bpe").build());
  EXPECT_EQ(tok->encode("ca", false, false), (Ids{5}));  // ignore_merges: the word is a token
  EXPECT_EQ(tok->encode("abc", false, false), (Ids{0, 1, 2}));
  EXPECT_FALSE(tok->add_bos());  // the llama3 default cannot apply without a BOS token
}

TEST(BpeTokenizer, InvalidUtf8BecomesReplacementCharacter) {
  HandVocab v = bpe_vocab("gpt-2");
  // U+FFFD is EF BF BD: "ï", "¿", "½" in GPT-2's byte map.
  v.tokens.push_back("\xC3\xAF");
  v.tokens.push_back("\xC2\xBF");
  v.tokens.push_back("\xC2\xBD");
  v.types.insert(v.types.end(), {1, 1, 1});
  const auto tok = make(v.build());
  EXPECT_EQ(tok->encode("\xFF", false, false), (Ids{8, 9, 10}));
  EXPECT_EQ(tok->decode({8, 9, 10}), "\xEF\xBF\xBD");
}

}  // namespace
}  // namespace strata::test
