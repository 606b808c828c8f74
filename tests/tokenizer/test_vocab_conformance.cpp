// Conformance with llama.cpp: the tokenizer test vectors shipped with llama.cpp's vocab-only
// GGUFs (../shared/vocab) and the prompts of the llama.cpp reference runs (../shared/reference).
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/fixtures.h"
#include "formats/model_file.h"
#include "tokenizer_test_util.h"

namespace strata::test {
namespace {

std::vector<std::string> list_dir(const std::string& dir, const std::string& prefix,
                                  const std::string& suffix) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.size() >= prefix.size() + suffix.size() && n.rfind(prefix, 0) == 0 &&
          n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
        names.push_back(n);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> split_cases(const std::string& s) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> cases;
  size_t pos = 0;
  for (size_t hit; (hit = s.find(sep, pos)) != std::string::npos; pos = hit + sep.size())
    cases.push_back(s.substr(pos, hit - pos));
  return cases;
}

class VocabFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabFixture, MatchesLlamaCppIds) {
  const std::string path = shared_path("vocab/" + GetParam());
  const auto tok = load_gguf_tokenizer(path);
  const std::vector<std::string> cases = split_cases(read_file(path + ".inp"));
  std::vector<std::string> expected;
  std::istringstream out(read_file(path + ".out"));
  for (std::string line; std::getline(out, line);) expected.push_back(line);
  ASSERT_EQ(cases.size(), expected.size());
  ASSERT_GT(cases.size(), 10u);
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<int32_t> ids = tok->encode(cases[i], /*add_special=*/false, /*parse_special=*/false);
    EXPECT_EQ(join_ids(ids), join_ids(parse_ids(expected[i]))) << "case " << i << ": '" << cases[i] << "'";
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, VocabFixture,
                         ::testing::ValuesIn(list_dir(shared_path("vocab"), "ggml-vocab-", ".gguf")),
                         [](const auto& info) {
                           std::string n = info.param.substr(11, info.param.size() - 16);
                           std::replace_if(
                               n.begin(), n.end(), [](char c) { return !isalnum(c); }, '_');
                           return n;
                         });

TEST(VocabFixtures, AllSevenArePresent) {
  EXPECT_EQ(list_dir(shared_path("vocab"), "ggml-vocab-", ".gguf").size(), 7u);
}

class ReferencePrompts : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferencePrompts, TokenizeWithBosLikeLlamaCpp) {
  const std::string jsonl = shared_path("reference/" + GetParam());
  const std::string model =
      shared_path(GetParam().rfind("stories260K", 0) == 0
                      ? "models/stories260K/stories260K.gguf"
                      : "models/synth-tiny/" + GetParam().substr(0, GetParam().size() - 6) + ".gguf");
  const auto tok = load_gguf_tokenizer(model);
  std::istringstream in(read_file(jsonl));
  int n = 0;
  for (std::string line; std::getline(in, line); ++n) {
    const auto j = nlohmann::json::parse(line);
    const std::vector<int32_t> expected = j.at("tokens").get<std::vector<int32_t>>();
    EXPECT_EQ(join_ids(tok->encode(j.at("prompt").get<std::string>(), true, false)), join_ids(expected));
  }
  EXPECT_GT(n, 0);
}

// The llama2.c checkpoint's tokenizer (tok512.bin, translated by the formats layer) tokenizes
// like llama.cpp's GGUF of the same model.
TEST(ReferencePromptsLlama2c, Stories260K) {
  const auto file = open_model_file(shared_path("models/stories260K/stories260K.bin"));
  const auto tok = Tokenizer::from_metadata(file->metadata());
  std::istringstream in(read_file(shared_path("reference/stories260K.jsonl")));
  int n = 0;
  for (std::string line; std::getline(in, line); ++n) {
    const auto j = nlohmann::json::parse(line);
    EXPECT_EQ(join_ids(tok->encode(j.at("prompt").get<std::string>(), true, false)),
              join_ids(j.at("tokens").get<std::vector<int32_t>>()));
  }
  EXPECT_GT(n, 0);
}

INSTANTIATE_TEST_SUITE_P(Shared, ReferencePrompts,
                         ::testing::ValuesIn(list_dir(shared_path("reference"), "", ".jsonl")),
                         [](const auto& info) {
                           std::string n = info.param.substr(0, info.param.size() - 6);
                           std::replace_if(
                               n.begin(), n.end(), [](char c) { return !isalnum(c); }, '_');
                           return n;
                         });

}  // namespace
}  // namespace strata::test
