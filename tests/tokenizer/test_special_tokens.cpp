// Which token texts are matched in raw text, with and without parse_special, against llama.cpp's
// rule (llama-vocab.cpp): tokens typed CONTROL, USER_DEFINED or UNKNOWN are matched before the
// model's tokenizer runs; without parse_special CONTROL and UNKNOWN ones are skipped; a token
// whose text llama.cpp knows as an end-of-turn / end-of-generation / fill-in-the-middle marker is
// made CONTROL first (so Phi-3's user-defined "</s>" is plain text without parse_special).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "common/fixtures.h"
#include "formats/gguf_reader.h"
#include "tokenizer_test_util.h"

namespace strata::test {
namespace {

using Ids = std::vector<TokenId>;

// GGUF token_type values (llama.cpp's LLAMA_TOKEN_TYPE_*).
constexpr int32_t kTypeUnknown = 2, kTypeControl = 3, kTypeUserDefined = 4;

struct SharedVocab {
  const char* file;
  // Tokens whose text alone encodes to themselves without parse_special, worked out from the
  // file's token_type array (see the dump in the comment) and the rule above.
  int64_t matched_without_parse_special;
};

// token_type counts of the shared files: deepseek-llm 2 control + 2398 user-defined ("ø", ...,
// "[PAD100015]"...), falcon 12 control, gpt-2 1 control, llama-spm 1 unknown + 2 control, mpt
// 2 control + 178 user-defined (whitespace runs, "[PAD50277]"...), phi-3 53 unknown + 13 control
// + one user-defined, "</s>", which is an end-of-generation text, starcoder 38 control.
const SharedVocab kSharedVocabs[] = {
    {"ggml-vocab-deepseek-llm.gguf", 2398}, {"ggml-vocab-falcon.gguf", 0}, {"ggml-vocab-gpt-2.gguf", 0},
    {"ggml-vocab-llama-spm.gguf", 0},       {"ggml-vocab-mpt.gguf", 178},  {"ggml-vocab-phi-3.gguf", 0},
    {"ggml-vocab-starcoder.gguf", 0},
};

void PrintTo(const SharedVocab& v, std::ostream* os) {
  *os << v.file;
}

class SharedVocabSpecials : public ::testing::TestWithParam<SharedVocab> {};

TEST_P(SharedVocabSpecials, MatchedInTextByTypeAsLlamaCpp) {
  const auto file = GgufFile::open(shared_path(std::string("vocab/") + GetParam().file));
  const auto tok = Tokenizer::from_metadata(file->metadata());
  const GgufArray* types = file->metadata().get_array("tokenizer.ggml.token_type");
  ASSERT_NE(types, nullptr);
  ASSERT_EQ(types->i32.size(), static_cast<size_t>(tok->n_vocab()));
  // The id a special token's text stands for: the lowest id with that text.
  std::map<std::string, TokenId> first_with_text;
  for (TokenId id = tok->n_vocab() - 1; id >= 0; --id) first_with_text[std::string(tok->token_text(id))] = id;

  int64_t special = 0, matched_plain = 0;
  for (TokenId id = 0; id < tok->n_vocab(); ++id) {
    const int32_t type = types->i32[static_cast<size_t>(id)];
    if (type != kTypeUnknown && type != kTypeControl && type != kTypeUserDefined) continue;
    const std::string text(tok->token_text(id));
    if (text.empty()) continue;
    ++special;
    const TokenId expect = first_with_text[text];
    // With parse_special every special text is its token.
    EXPECT_EQ(tok->encode(text, false, true), (Ids{expect})) << text;
    const Ids plain = tok->encode(text, false, false);
    if (plain == Ids{expect}) {
      ++matched_plain;
      EXPECT_EQ(tok->token_kind(id), TokenKind::UserDefined) << text;
    } else {
      // Plain text: the special token never appears, and the pieces spell the text.
      EXPECT_EQ(std::count(plain.begin(), plain.end(), expect), 0) << text;
      EXPECT_NE(tok->token_kind(id), TokenKind::UserDefined) << text;
      std::string spelled = tok->decode(plain);
      if (tok->adds_space_prefix() && !spelled.empty() && spelled[0] == ' ') spelled.erase(0, 1);
      EXPECT_EQ(spelled, text);
    }
  }
  EXPECT_GT(special, 0);
  EXPECT_EQ(matched_plain, GetParam().matched_without_parse_special);
}

INSTANTIATE_TEST_SUITE_P(Shared, SharedVocabSpecials, ::testing::ValuesIn(kSharedVocabs),
                         [](const auto& info) {
                           std::string n = info.param.file;
                           n = n.substr(11, n.size() - 16);
                           std::replace_if(
                               n.begin(), n.end(), [](char c) { return !isalnum(c); }, '_');
                           return n;
                         });

// Phi-3's "</s>" (id 2, user-defined in the file): SentencePiece's merges by score give
// "▁</" "s" ">" as plain text (worked out from the vocabulary's scores). Its special tokens also
// swallow the whitespace after them, and the text after a special token gets the dummy prefix.
TEST(Phi3Specials, EndOfSentenceTextIsPlainWithoutParseSpecial) {
  const auto tok = load_gguf_tokenizer(shared_path("vocab/ggml-vocab-phi-3.gguf"));
  auto id = [&](const char* piece) {
    const TokenId t = tok->find_token(piece);
    EXPECT_GE(t, 0) << piece;
    return t;
  };
  const TokenId lt_slash = id("\xE2\x96\x81</"), s = id("s"), gt = id(">"), slash_open = id("</");
  const TokenId hello = id("\xE2\x96\x81Hello"), world = id("\xE2\x96\x81world"), hi = id("\xE2\x96\x81Hi");
  EXPECT_EQ(tok->token_kind(2), TokenKind::Control);  // made control by its text, as llama.cpp does
  EXPECT_TRUE(tok->is_eog(2));
  EXPECT_EQ(tok->encode("</s>", false, false), (Ids{lt_slash, s, gt}));
  EXPECT_EQ(tok->encode("</s>", false, true), (Ids{2}));
  EXPECT_EQ(tok->encode("Hello</s> world", false, false), (Ids{hello, slash_open, s, gt, world}));
  EXPECT_EQ(tok->encode("Hello</s> world", false, true), (Ids{hello, 2, world}));
  // The chat format: <|user|> (32010) and <|end|> (32007) eat the newline after them.
  EXPECT_EQ(tok->encode("<|user|>\nHi<|end|>\n", false, true), (Ids{32010, hi, 32007}));
  const Ids plain = tok->encode("<|user|>\nHi<|end|>\n", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 32010) + std::count(plain.begin(), plain.end(), 32007), 0);
  // Without render_special a control token prints nothing.
  EXPECT_EQ(tok->token_to_piece(2), "");
  EXPECT_EQ(tok->token_to_piece(2, /*render_special=*/true), "</s>");
}

// The role texts on a hand-made vocabulary: 0 <unk>, 1 <s>, 2 </s>, 3 ▁, 4 a, then user-defined
// tokens 5..12 and a normal one.
HandVocab role_vocab(std::vector<std::string> extra, std::vector<int32_t> extra_types) {
  HandVocab v;
  v.tokens = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a"};
  v.types = {2, 3, 3, 1, 1};
  v.tokens.insert(v.tokens.end(), extra.begin(), extra.end());
  v.types.insert(v.types.end(), extra_types.begin(), extra_types.end());
  v.scores.assign(v.tokens.size(), 0.0f);
  return v;
}

TEST(SpecialTokenRules, RoleTextsBecomeControlUnlessTheMetadataNamesTheRole) {
  // 5 <|eot_id|>, 6 <|im_end|>: both end-of-generation texts; the first is the EOT.
  // 7 <fim_prefix>, 8 <fim_pad>, 9 <|file_sep|>: FIM roles (pad and separator end generation).
  // 10 <tool>: user-defined and nothing else. 11 <|channel|>: gpt-oss, always user-defined.
  const HandVocab v = role_vocab(
      {"<|eot_id|>", "<|im_end|>", "<fim_prefix>", "<fim_pad>", "<|file_sep|>", "<tool>", "<|channel|>"},
      {4, 4, 4, 4, 4, 4, 3});
  auto tok = Tokenizer::from_metadata(v.build());
  EXPECT_EQ(tok->eot(), 5);
  for (TokenId t : {5, 6, 7, 8, 9}) EXPECT_EQ(tok->token_kind(t), TokenKind::Control) << t;
  EXPECT_EQ(tok->token_kind(10), TokenKind::UserDefined);
  EXPECT_EQ(tok->token_kind(11), TokenKind::UserDefined);
  EXPECT_EQ(tok->eog_tokens(), (Ids{2, 5, 6, 8, 9}));
  EXPECT_EQ(tok->encode("a<tool><|channel|>", false, false), (Ids{3, 4, 10, 11}));
  EXPECT_EQ(tok->encode("<fim_prefix>", false, true), (Ids{7}));
  const Ids plain = tok->encode("<fim_prefix>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 7), 0);

  // A role named in the metadata is not looked for by text: <fim_prefix> keeps its type.
  Metadata md = v.build();
  md.add("tokenizer.ggml.fim_pre_token_id", GgufValue::of_u32(4));
  md.add("tokenizer.ggml.eot_token_id", GgufValue::of_u32(6));
  tok = Tokenizer::from_metadata(md);
  EXPECT_EQ(tok->token_kind(7), TokenKind::UserDefined);
  EXPECT_EQ(tok->eot(), 6);
  EXPECT_EQ(tok->encode("<fim_prefix>", false, false), (Ids{7}));
}

TEST(SpecialTokenRules, LlamaCppExceptionsToEndOfGeneration) {
  // gpt-oss: with <|return|> and <|call|> present, <|end|> only ends a message.
  auto tok = Tokenizer::from_metadata(role_vocab({"<|return|>", "<|call|>", "<|end|>"}, {3, 3, 3}).build());
  EXPECT_EQ(tok->eog_tokens(), (Ids{2, 5, 6}));
  EXPECT_EQ(tok->token_kind(7), TokenKind::UserDefined);
  EXPECT_EQ(tok->encode("<|end|>", false, false), (Ids{7}));
  // Without them <|end|> ends generation.
  tok = Tokenizer::from_metadata(role_vocab({"<|end|>"}, {4}).build());
  EXPECT_EQ(tok->eog_tokens(), (Ids{2, 5}));
  EXPECT_EQ(tok->token_kind(5), TokenKind::Control);
  // gemma4: next to <|tool_response>, "</s>" is an ordinary token (here EOS is <eos>).
  HandVocab g = role_vocab({"<eos>", "<|tool_response>"}, {3, 3});
  Metadata md = g.build();
  md.add("tokenizer.ggml.eos_token_id", GgufValue::of_u32(5));
  tok = Tokenizer::from_metadata(md);
  EXPECT_EQ(tok->eog_tokens(), (Ids{5, 6}));
  EXPECT_EQ(tok->token_kind(2), TokenKind::Normal);
}

}  // namespace
}  // namespace strata::test
