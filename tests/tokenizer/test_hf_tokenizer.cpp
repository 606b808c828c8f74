// Hugging Face tokenizer directories: tokenizer.json (+ tokenizer_config.json, ...) translated to
// GGUF keys by add_hf_tokenizer_metadata and tokenized like the Hugging Face model defines.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/fixtures.h"
#include "core/check.h"
#include "formats/hf_tokenizer.h"
#include "tokenizer_test_util.h"

namespace strata::test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kTinyStories = "models/tinystories656k";

std::unique_ptr<Tokenizer> hf_tokenizer(const std::string& dir) {
  Metadata md;
  add_hf_tokenizer_metadata(dir, md);
  return Tokenizer::from_metadata(md);
}

// Hugging Face's BPE with byte fallback, written plainly from its definition: the normalizer
// prepends "▁" and maps spaces to "▁"; characters without a token become <0xNN> tokens when all
// their bytes have one, else one <unk> per run; then the lowest-rank adjacent pair (leftmost
// first) is merged until no pair has a merge.
const char* kReferenceBpe = R"PY(
import json, sys
req = json.load(sys.stdin)
tj = json.load(open(req["tokenizer"], encoding="utf-8"))
m = tj["model"]; vocab = m["vocab"]
ranks = {}
for i, x in enumerate(m["merges"]):
    ranks.setdefault(tuple(x.split(" ", 1)) if isinstance(x, str) else tuple(x), i)
def encode(text):
    if not text:
        return []
    syms = []
    for ch in "\u2581" + text.replace(" ", "\u2581"):
        if ch in vocab:
            syms.append(ch)
            continue
        byte_tokens = ["<0x%02X>" % b for b in ch.encode("utf-8")]
        if all(t in vocab for t in byte_tokens):
            syms += byte_tokens
        elif not syms or syms[-1] is not None:
            syms.append(None)
    while True:
        best = None
        for i in range(len(syms) - 1):
            if syms[i] is not None and syms[i + 1] is not None:
                r = ranks.get((syms[i], syms[i + 1]))
                if r is not None and (best is None or r < best[0]):
                    best = (r, i)
        if best is None:
            break
        i = best[1]
        syms[i:i + 2] = [syms[i] + syms[i + 1]]
    return [vocab[t] if t is not None else vocab[m["unk_token"]] for t in syms]
json.dump([encode(t) for t in req["texts"]], sys.stdout)
)PY";

const std::vector<std::string>& story_texts() {
  static const std::vector<std::string> texts = {
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park.",
      "One day, she saw a big, red ball. She wanted to play with it, but it was too high.",
      "Lily's mom said, \"Lily, let's go to the park.\" Lily was sad and didn't know what to do.",
      "Tom and Sue were best friends.\nThey liked to build castles in the sand!\n\nThe end.",
      "The little dog barked: \"Woof! Woof!\" Then it ran away; nobody saw it again?",
      "  Two  spaces   and  three ",
      "Numbers 1, 22 and 333 - and <|start_story|> written out.",
      "A",
      " ",
      "x\ny",
  };
  return texts;
}

TEST(HfTokenizer, TinyStoriesMetadataLikeTheConverter) {
  Metadata md;
  add_hf_tokenizer_metadata(shared_path(kTinyStories), md);
  EXPECT_EQ(md.string_or("tokenizer.ggml.model", ""), "llama");
  ASSERT_NE(md.get_array("tokenizer.ggml.tokens"), nullptr);
  EXPECT_EQ(md.get_array("tokenizer.ggml.tokens")->size(), 2048u);
  EXPECT_EQ(md.get_array("tokenizer.ggml.merges")->size(), 1967u);
  EXPECT_EQ(md.int_or("tokenizer.ggml.bos_token_id", -1), 1);  // <|start_story|>
  EXPECT_EQ(md.int_or("tokenizer.ggml.eos_token_id", -1), 2);  // <|end_story|>
  EXPECT_EQ(md.int_or("tokenizer.ggml.unknown_token_id", -1), 0);
  EXPECT_TRUE(md.bool_or("tokenizer.ggml.add_bos_token", false));
  EXPECT_FALSE(md.bool_or("tokenizer.ggml.add_eos_token", true));
  EXPECT_TRUE(md.bool_or("tokenizer.ggml.add_space_prefix", false));
  const auto tok = Tokenizer::from_metadata(md);
  EXPECT_EQ(tok->token_kind(0), TokenKind::Unknown);
  EXPECT_EQ(tok->token_kind(1), TokenKind::Control);
  EXPECT_EQ(tok->token_kind(80), TokenKind::Normal);
  EXPECT_TRUE(tok->is_eog(2));
  EXPECT_FALSE(tok->is_eog(1));
}

TEST(HfTokenizer, TinyStoriesHandDerivedIds) {
  const auto tok = hf_tokenizer(shared_path(kTinyStories));
  // Worked out from tokenizer.json: "▁" has no merge with "O"; "e ▁" is merge 0, ...
  EXPECT_EQ(tok->encode("Once upon a time", true, false), (std::vector<TokenId>{1, 80, 147, 201, 282, 57}));
  EXPECT_EQ(tok->encode("The little dog", false, false), (std::vector<TokenId>{80, 247, 229, 604}));
  // Characters without a token and without byte tokens: one <unk> per run.
  EXPECT_EQ(tok->encode("日本 x", false, false), (std::vector<TokenId>{80, 0, 80, 76}));
  EXPECT_EQ(tok->encode("", true, false), (std::vector<TokenId>{1}));
  // With parse_special the control token's text becomes the token.
  EXPECT_EQ(tok->encode("<|end_story|>", false, true), (std::vector<TokenId>{2}));
}

TEST(HfTokenizer, TinyStoriesIdsMatchTheBpeDefinition) {
  const auto tok = hf_tokenizer(shared_path(kTinyStories));
  std::vector<std::string> texts = story_texts();
  texts.push_back("Émilie ate 🍰 and 日本語 — ok");
  texts.push_back("tabs\tare\t\tunknown here");
  const json req = {{"tokenizer", shared_path(kTinyStories + "/tokenizer.json")}, {"texts", texts}};
  const json expected = json::parse(run_python(kReferenceBpe, req.dump()));
  ASSERT_EQ(expected.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i)
    EXPECT_EQ(join_ids(tok->encode(texts[i], false, false)),
              join_ids(expected[i].get<std::vector<int32_t>>()))
        << "text: '" << texts[i] << "'";
}

TEST(HfTokenizer, TinyStoriesRoundTrip) {
  const auto tok = hf_tokenizer(shared_path(kTinyStories));
  for (const std::string& t : story_texts()) {
    EXPECT_EQ(tok->decode(tok->encode(t, true, false)), t);
    StreamingDetokenizer stream(*tok, false);
    std::string streamed;
    for (TokenId id : tok->encode(t, true, false)) streamed += stream.push(id);
    streamed += stream.finish();
    EXPECT_EQ(streamed, t);
  }
}

// A scratch directory with the given files, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/strata_hf_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ + "/" + name, std::ios::binary) << text;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A tiny GPT-2 style byte-level BPE: "Ġ" stands for the space byte.
json byte_level_tokenizer(const json& pre_tokenizer) {
  json vocab = json::object();
  const std::vector<std::string> toks = {"h",      "e",  "l",   "o",     "Ġ",  "w",  "r",    "d",
                                         "he",     "ll", "llo", "hello", "Ġw", "or", "Ġwor", "ld",
                                         "Ġworld", "1",  "2",   "3",     "12", "!"};
  for (size_t i = 0; i < toks.size(); ++i) vocab[toks[i]] = i;
  return {{"model",
           {{"type", "BPE"},
            {"vocab", vocab},
            {"merges", {"h e", "l l", "ll o", "he llo", "Ġ w", "o r", "Ġw or", "l d", "Ġwor ld", "1 2"}}}},
          {"added_tokens",
           {{{"id", 22}, {"content", "<|im_start|>"}, {"special", true}},
            {{"id", 23}, {"content", "<tool>"}, {"special", false}},
            {{"id", 24}, {"content", "<|endoftext|>"}, {"special", false}}}},
          {"pre_tokenizer", pre_tokenizer},
          {"decoder", {{"type", "ByteLevel"}}}};
}

TEST(HfTokenizer, ByteLevelBpeDirectory) {
  TempDir dir;
  dir.write("tokenizer.json", byte_level_tokenizer({{"type", "ByteLevel"}, {"use_regex", true}}).dump());
  dir.write("tokenizer_config.json",
            json{{"eos_token", "<|endoftext|>"},
                 {"chat_template",
                  {{{"name", "tool_use"}, {"template", "T"}}, {{"name", "default"}, {"template", "D"}}}}}
                .dump());
  Metadata md;
  add_hf_tokenizer_metadata(dir.path(), md);
  EXPECT_EQ(md.string_or("tokenizer.ggml.model", ""), "gpt2");
  EXPECT_EQ(md.string_or("tokenizer.ggml.pre", ""), "gpt-2");
  EXPECT_EQ(md.string_or("tokenizer.chat_template", ""), "D");
  EXPECT_EQ(md.int_or("tokenizer.ggml.eos_token_id", -1), 24);
  const auto tok = Tokenizer::from_metadata(md);
  EXPECT_EQ(tok->token_kind(22), TokenKind::Control);
  EXPECT_EQ(tok->token_kind(23), TokenKind::UserDefined);
  EXPECT_EQ(tok->token_kind(24), TokenKind::Control);  // looks special: <|...|>
  EXPECT_TRUE(tok->is_eog(24));
  // "hello world!" -> words "hello", " world", "!"; merges give single tokens.
  EXPECT_EQ(tok->encode("hello world!", false, false), (std::vector<TokenId>{11, 16, 21}));
  // User-defined tokens are split out even without parse_special; control ones only with it.
  EXPECT_EQ(tok->encode("he<tool>123", false, false), (std::vector<TokenId>{8, 23, 20, 19}));
  EXPECT_EQ(tok->encode("<|im_start|>he", false, true), (std::vector<TokenId>{22, 8}));
  EXPECT_EQ(tok->decode({11, 16, 21}), "hello world!");
}

TEST(HfTokenizer, RecognisesPreTokenizers) {
  const auto pre_of = [](const json& pre) {
    TempDir dir;
    dir.write("tokenizer.json", byte_level_tokenizer(pre).dump());
    Metadata md;
    add_hf_tokenizer_metadata(dir.path(), md);
    return md.string_or("tokenizer.ggml.pre", "");
  };
  const auto split = [](const std::string& re) {
    return json{{"type", "Split"}, {"pattern", {{"Regex", re}}}, {"behavior", "Isolated"}, {"invert", false}};
  };
  const json byte_level = {{"type", "ByteLevel"}, {"use_regex", false}};
  const std::string llama3 = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3})"
                             R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  std::string qwen2 = llama3;
  qwen2.replace(qwen2.find("\\p{N}{1,3}"), 10, "\\p{N}");
  EXPECT_EQ(pre_of({{"type", "Sequence"}, {"pretokenizers", {split(llama3), byte_level}}}), "llama-bpe");
  EXPECT_EQ(pre_of({{"type", "Sequence"}, {"pretokenizers", {split(qwen2), byte_level}}}), "qwen2");
  EXPECT_EQ(pre_of({{"type", "Sequence"},
                    {"pretokenizers",
                     {{{"type", "Digits"}, {"individual_digits", true}},
                      {{"type", "ByteLevel"}, {"use_regex", true}}}}}),
            "starcoder");
  EXPECT_EQ(pre_of({{"type", "Sequence"},
                    {"pretokenizers",
                     {split("[\r\n]"),
                      split("\\s?\\p{L}+"),
                      split("\\s?\\p{P}+"),
                      split("[一-龥ࠀ-一가-퟿]+"),
                      {{"type", "Digits"}, {"individual_digits", true}},
                      byte_level}}}),
            "deepseek-coder");
  EXPECT_THROW(pre_of({{"type", "Sequence"}, {"pretokenizers", {split("[a-z]+"), byte_level}}}), Error);
}

TEST(HfTokenizer, MalformedDirectoriesAreErrors) {
  TempDir dir;
  Metadata md;
  EXPECT_THROW(add_hf_tokenizer_metadata(dir.path(), md), Error);  // no tokenizer.json
  dir.write("tokenizer.json", "{not json");
  EXPECT_THROW(add_hf_tokenizer_metadata(dir.path(), md), Error);
  dir.write("tokenizer.json", json{{"model", {{"type", "WordPiece"}, {"vocab", json::object()}}}}.dump());
  EXPECT_THROW(add_hf_tokenizer_metadata(dir.path(), md), Error);
  dir.write("tokenizer.json", json{{"model", {{"type", "BPE"}, {"vocab", {{"a", -5}}}}}}.dump());
  EXPECT_THROW(add_hf_tokenizer_metadata(dir.path(), md), Error);
  dir.write("tokenizer.json", json{{"model", {{"type", "BPE"}, {"vocab", {{"a", 1u << 30}}}}}}.dump());
  EXPECT_THROW(add_hf_tokenizer_metadata(dir.path(), md), Error);
}

}  // namespace
}  // namespace strata::test
