// Hostile input: random bytes, invalid UTF-8, 10 MB texts and vocabularies with huge or
// ambiguous tokens. Nothing may crash, hang or use unbounded memory; round trips that must hold
// do hold.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <random>

#include "common/fixtures.h"
#include "core/check.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/unicode.h"
#include "tokenizer_test_util.h"

namespace strata::test {
namespace {

std::string random_bytes(std::mt19937& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// Mostly-valid UTF-8 with stray bytes: ASCII words, multi-byte characters, broken sequences.
std::string utf8_soup(std::mt19937& rng, size_t n) {
  static const std::vector<std::string> parts = {"the ", "cat",  " ",    "  ",           "\n",       "é",
                                                 "中文", "🦙", "12",   "'s",           "\xE4\xB8", "\xFF",
                                                 "\x80", "<s>",  "</s>", "<|endoftext|>"};
  std::string s;
  while (s.size() < n) s += parts[rng() % parts.size()];
  return s;
}

std::string english(size_t n) {
  const std::string para =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. "
      "One day, she saw a big, red ball. \"Can I play with it?\" she asked her mom. Her mom said yes, "
      "and Lily played until the sun went down; it was 7:30 pm and 21 degrees.\n";
  std::string s;
  while (s.size() < n) s += para;
  s.resize(n);
  return s;
}

// Where two byte strings first differ, with some context (the strings themselves are large).
std::string difference(const std::string& a, const std::string& b) {
  if (a == b) return "";
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  const auto hex = [&](const std::string& s) {
    std::string h;
    for (size_t k = i >= 8 ? i - 8 : 0; k < std::min(s.size(), i + 8); ++k) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%02x ", static_cast<unsigned char>(s[k]));
      h += buf;
    }
    return h;
  };
  return "sizes " + std::to_string(a.size()) + "/" + std::to_string(b.size()) + ", first difference at " +
         std::to_string(i) + ": [" + hex(a) + "] vs [" + hex(b) + "]";
}

long peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024;
}

class FixtureTokenizers : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Tokenizer> tok =
      load_gguf_tokenizer(shared_path("vocab/ggml-vocab-" + GetParam() + ".gguf"));
};

TEST_P(FixtureTokenizers, RandomBytesNeverCrash) {
  std::mt19937 rng(42);
  for (int round = 0; round < 20; ++round) {
    const std::string text = round % 2 ? random_bytes(rng, 4096) : utf8_soup(rng, 4096);
    for (bool add : {false, true})
      for (bool parse : {false, true}) {
        const std::vector<TokenId> ids = tok->encode(text, add, parse);
        for (TokenId id : ids) ASSERT_TRUE(id >= 0 && id < tok->n_vocab());
        StreamingDetokenizer s(*tok, false);
        std::string out;
        for (TokenId id : ids) out += s.push(id);
        out += s.finish();
        EXPECT_EQ(unicode::sanitize_utf8(out), out);
      }
  }
}

TEST_P(FixtureTokenizers, RoundTrip) {
  std::mt19937 rng(5);
  for (int round = 0; round < 10; ++round) {
    const std::string text = round % 2 ? random_bytes(rng, 2048) : utf8_soup(rng, 2048);
    const std::string back = tok->decode(tok->encode(text, true, false));
    if (tok->model_name() == "llama") {
      // Byte fallback keeps every character of valid UTF-8 (a literal "▁" comes back as a space).
      // Malformed sequences are cut by their lead byte's length, as in llama.cpp, so an escaped
      // space inside one stays "▁": only valid text must survive exactly.
      const std::string valid = unicode::sanitize_utf8(text);
      if (valid.find("\xE2\x96\x81") == std::string::npos)
        EXPECT_EQ(difference(tok->decode(tok->encode(valid, true, false)), valid), "");
    } else {
      // Byte-level BPE sees malformed UTF-8 as U+FFFD, like llama.cpp, and bytes whose GPT-2
      // symbol is not in the vocabulary are dropped (falcon and starcoder lack a few).
      std::string normalized, expected;
      for (uint32_t cp : unicode::to_codepoints(text)) unicode::append_utf8(normalized, cp);
      for (char c : normalized)
        if (tok->find_token(byte_level::byte_to_symbol(static_cast<uint8_t>(c))) >= 0) expected += c;
      EXPECT_EQ(difference(back, expected), "");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, FixtureTokenizers,
                         ::testing::Values("llama-spm", "gpt-2", "falcon", "deepseek-llm", "starcoder"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

constexpr size_t kTenMegabytes = 10u << 20;

TEST(LargeInputs, TenMegabytesOfEnglishSpm) {
  const auto spm = load_gguf_tokenizer(shared_path("vocab/ggml-vocab-llama-spm.gguf"));
  const std::string text = english(kTenMegabytes);
  EXPECT_EQ(difference(spm->decode(spm->encode(text, true, false)), text), "");
  EXPECT_LT(peak_rss_mib(), 3072);  // linear memory: a few hundred bytes per input byte at most
}

TEST(LargeInputs, TenMegabytesOfEnglishBpe) {
  const auto bpe = load_gguf_tokenizer(shared_path("vocab/ggml-vocab-gpt-2.gguf"));
  const std::string text = english(kTenMegabytes);
  EXPECT_EQ(difference(bpe->decode(bpe->encode(text, false, false)), text), "");
  EXPECT_LT(peak_rss_mib(), 3072);
}

TEST(LargeInputs, HugeSingleWord) {
  // One 4 MB pre-tokenizer word (byte-level BPE) and one 4 MB run without spaces (SPM): all of
  // it is merged as a whole (4 MB keeps the sanitizer build fast; 10 MB runs fine too).
  const std::string same(4u << 20, 'a');
  const auto bpe = load_gguf_tokenizer(shared_path("vocab/ggml-vocab-gpt-2.gguf"));
  EXPECT_EQ(difference(bpe->decode(bpe->encode(same, false, false)), same), "");
  const auto spm = load_gguf_tokenizer(shared_path("vocab/ggml-vocab-llama-spm.gguf"));
  EXPECT_EQ(difference(spm->decode(spm->encode(same, true, false)), same), "");
  EXPECT_LT(peak_rss_mib(), 3072);
  std::printf("peak RSS after 4 MB single-word inputs: %ld MiB\n", peak_rss_mib());
}

TEST(LargeInputs, TenMegabytesOfNoise) {
  std::mt19937 rng(1);
  const std::string noise = random_bytes(rng, kTenMegabytes);
  const auto spm = load_gguf_tokenizer(shared_path("vocab/ggml-vocab-llama-spm.gguf"));
  EXPECT_GT(spm->encode(noise, false, true).size(), noise.size() / 4);
  const auto bpe = load_gguf_tokenizer(shared_path("vocab/ggml-vocab-deepseek-llm.gguf"));
  EXPECT_GT(bpe->encode(noise, false, true).size(), noise.size() / 4);
  EXPECT_LT(peak_rss_mib(), 3072);
}

TEST(HostileVocab, HugeTokens) {
  // "a", "b" and "ab" repeated 1..2048 times: tokens up to the 4096-byte limit that long runs
  // of "ab" keep merging into.
  HandVocab v;
  v.tokens = {"<unk>", "<s>", "</s>", "a", "b"};
  std::string t;
  for (int k = 1; k <= 2048; ++k) v.tokens.push_back(t += "ab");
  Metadata md = v.build();
  md.add("tokenizer.ggml.add_space_prefix", GgufValue::of_bool(false));
  const auto tok = Tokenizer::from_metadata(md);
  std::string text;
  while (text.size() < (1u << 20)) text += "ab";
  const std::vector<TokenId> ids = tok->encode(text, false, false);
  EXPECT_EQ(difference(tok->decode(ids), text), "");
  EXPECT_LT(ids.size(), text.size() / 100);  // long tokens were used
}

TEST(HostileVocab, AmbiguousSpecialTokensFailCleanly) {
  // Special tokens a, aa, aaa, ...: every position of a long run of "a" matches all of them.
  HandVocab v;
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.types = {2, 3, 3};
  for (int k = 1; k <= 300; ++k) {
    v.tokens.push_back(std::string(k, 'a'));
    v.types.push_back(4);
  }
  v.tokens.push_back(std::string(4096, 'a'));
  v.types.push_back(3);
  const auto tok = Tokenizer::from_metadata(v.build());
  const std::string text(1u << 20, 'a');
  EXPECT_THROW(tok->encode(text, false, false), Error);
  EXPECT_THROW(tok->encode(text, false, true), Error);
  // Short texts still work: longest token first, as llama.cpp.
  EXPECT_EQ(tok->encode(std::string(301, 'a'), false, false), (std::vector<TokenId>{302, 3}));
}

}  // namespace
}  // namespace strata::test
