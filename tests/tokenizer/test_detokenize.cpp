// Detokenization: pieces match llama.cpp's (the greedy_text_hex of the reference runs), and the
// streaming detokenizer emits valid UTF-8 only, holding back unfinished characters.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "common/fixtures.h"
#include "tokenizer/unicode.h"
#include "tokenizer_test_util.h"

namespace strata::test {
namespace {

using json = nlohmann::json;

std::string from_hex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

struct Reference {
  std::string model;
  std::vector<TokenId> greedy;
  std::string text_hex;
};

std::vector<Reference> references() {
  std::vector<Reference> refs;
  for (const std::string name : {"stories260K", "synth-tiny-f32", "synth-tiny-q2_k", "synth-tiny-q4_0",
                                 "synth-tiny-q5_0", "synth-tiny-q5_k_s", "synth-tiny-q8_0"}) {
    const std::string model =
        name == "stories260K" ? "models/stories260K/stories260K.gguf" : "models/synth-tiny/" + name + ".gguf";
    std::istringstream in(read_file(shared_path("reference/" + name + ".jsonl")));
    for (std::string line; std::getline(in, line);) {
      const json j = json::parse(line);
      refs.push_back(
          {model, j.at("greedy").get<std::vector<TokenId>>(), j.at("greedy_text_hex").get<std::string>()});
    }
  }
  return refs;
}

TEST(Detokenize, PiecesMatchLlamaCpp) {
  std::map<std::string, std::unique_ptr<Tokenizer>> toks;
  for (const Reference& r : references()) {
    auto& tok = toks[r.model];
    if (!tok) tok = load_gguf_tokenizer(shared_path(r.model));
    std::string bytes;
    for (TokenId id : r.greedy) bytes += tok->token_to_piece(id);
    EXPECT_EQ(bytes, from_hex(r.text_hex)) << r.model;
  }
}

TEST(Detokenize, StreamingEqualsPythonReplacementDecoding) {
  std::map<std::string, std::unique_ptr<Tokenizer>> toks;
  const std::vector<Reference> refs = references();
  json hexes = json::array();
  for (const Reference& r : refs) hexes.push_back(r.text_hex);
  const json expected = json::parse(run_python(
      "import json, sys\n"
      "print(json.dumps([bytes.fromhex(h).decode('utf-8', 'replace') for h in json.load(sys.stdin)]))\n",
      hexes.dump()));
  size_t with_invalid = 0;
  for (size_t i = 0; i < refs.size(); ++i) {
    auto& tok = toks[refs[i].model];
    if (!tok) tok = load_gguf_tokenizer(shared_path(refs[i].model));
    StreamingDetokenizer stream(*tok, /*after_bos=*/false);
    std::string out;
    for (TokenId id : refs[i].greedy) {
      const std::string part = stream.push(id);
      EXPECT_NO_THROW((void)json(part).dump()) << "invalid UTF-8 emitted";  // dump() rejects it
      out += part;
    }
    out += stream.finish();
    EXPECT_EQ(out, expected[i].get<std::string>());
    with_invalid += out.find("\xEF\xBF\xBD") != std::string::npos;
  }
  EXPECT_GT(with_invalid, 0u);  // the random-weight models do produce stray bytes
}

// 0 <unk>, 1 <s>, 2 </s>, 3 ▁hi, then byte tokens <0x00>..<0xFF> at 4 + byte.
std::unique_ptr<Tokenizer> byte_vocab() {
  HandVocab v;
  v.tokens = {"<unk>", "<s>", "</s>", "\xE2\x96\x81hi"};
  v.types = {2, 3, 3, 1};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    v.tokens.push_back(name);
    v.types.push_back(6);
  }
  return Tokenizer::from_metadata(v.build());
}

TEST(StreamingDetokenizer, HoldsBackUnfinishedCharacters) {
  const auto tok = byte_vocab();
  const auto byte = [](int b) { return 4 + b; };
  StreamingDetokenizer s(*tok, false);
  EXPECT_EQ(s.push(3), " hi");
  EXPECT_EQ(s.push(byte(0xE4)), "");
  EXPECT_EQ(s.push(byte(0xB8)), "");
  EXPECT_EQ(s.push(byte(0xAD)), "\xE4\xB8\xAD");  // 中
  EXPECT_EQ(s.push(byte(0xFF)), "\xEF\xBF\xBD");  // can never start a character
  EXPECT_EQ(s.push(byte(0xE4)), "");
  EXPECT_EQ(s.push(byte('a')),
            "\xEF\xBF\xBD"
            "a");  // the held byte was not continued
  EXPECT_EQ(s.push(byte(0xF0)), "");
  EXPECT_EQ(s.push(byte(0x9F)), "");
  EXPECT_EQ(s.finish(), "\xEF\xBF\xBD");  // one replacement for the unfinished sequence
  EXPECT_EQ(s.finish(), "");
}

TEST(StreamingDetokenizer, DropsTheDummySpaceAfterBos) {
  const auto tok = byte_vocab();
  StreamingDetokenizer from_empty_prompt(*tok, /*after_bos=*/true);
  EXPECT_EQ(from_empty_prompt.push(3), "hi");
  EXPECT_EQ(from_empty_prompt.push(3), " hi");
  StreamingDetokenizer with_bos(*tok, false);
  EXPECT_EQ(with_bos.push(1), "");
  EXPECT_EQ(with_bos.push(3), "hi");
  StreamingDetokenizer special(*tok, false, /*render_special=*/true);
  EXPECT_EQ(special.push(1), "<s>");
  EXPECT_EQ(special.push(3), "hi");
  EXPECT_EQ(special.push(2), "</s>");
}

TEST(StreamingDetokenizer, RandomIdsAlwaysGiveValidUtf8) {
  const auto tok = byte_vocab();
  std::mt19937 rng(99);
  StreamingDetokenizer s(*tok, false);
  std::string all;
  for (int i = 0; i < 20000; ++i) {
    const std::string part = s.push(static_cast<TokenId>(rng() % tok->n_vocab()));
    ASSERT_EQ(unicode::sanitize_utf8(part), part);
    all += part;
  }
  all += s.finish();
  EXPECT_EQ(unicode::sanitize_utf8(all), all);
  EXPECT_NO_THROW((void)json(all).dump());
}

}  // namespace
}  // namespace strata::test
