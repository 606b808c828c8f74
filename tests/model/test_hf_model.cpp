// A Hugging Face directory (tinystories656k, safetensors + tokenizer.json) runs, and gives the
// same logits as the same weights converted to an F32 GGUF by `strata quantize`: two load
// paths, one answer.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "backend/backend.h"
#include "common/fixtures.h"
#include "common/direct_session.h"
#include "model/model.h"

namespace strata {
namespace {

const std::string kDir = "models/tinystories656k";

std::vector<float> all_logits(Model& m, const std::vector<int32_t>& ids) {
  test::DirectSession s(m, static_cast<int64_t>(ids.size()));
  return s.eval(ids, true);
}

TEST(HfModel, SafetensorsAndConvertedGgufGiveIdenticalLogits) {
  auto backend = make_cpu_backend(1);
  auto hf = Model::load(test::shared_path(kDir), *backend);
  EXPECT_EQ(hf->config().n_layer, 2);
  EXPECT_EQ(hf->config().n_embd, 128);
  EXPECT_EQ(hf->config().n_head_kv, 4);
  EXPECT_EQ(hf->config().n_vocab, 2048);

  const std::string gguf = (std::filesystem::temp_directory_path() /
                            ("tinystories656k_f32_" + std::to_string(::getpid()) + ".gguf")).string();
  const auto r = test::run_command({test::strata_binary(), "quantize", test::shared_path(kDir), gguf, "f32"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto converted = Model::load(gguf, *backend);
  std::filesystem::remove(gguf);

  const auto ids = hf->tokenizer().encode("Once upon a time, there was a little cat named Tom.", true, false);
  EXPECT_EQ(converted->tokenizer().encode("Once upon a time, there was a little cat named Tom.", true, false), ids);
  const auto a = all_logits(*hf, ids), b = all_logits(*converted, ids);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

TEST(HfModel, GreedyGenerationIsFluentEnglish) {
  auto backend = make_cpu_backend(1);
  auto m = Model::load(test::shared_path(kDir), *backend);
  const auto r = test::run_command({test::strata_binary(), "run", "-m", test::shared_path(kDir), "-p",
                                    "Once upon a time", "-n", "60", "--temp", "0", "-t", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Fluent: mostly lower-case words from the model's own story world, sentences, no byte soup.
  int words = 0, common = 0;
  for (const char* w : {" the ", " a ", " was ", " to ", " and ", " he ", " she ", " they "})
    if (r.out.find(w) != std::string::npos) ++common;
  for (size_t i = 0; i + 1 < r.out.size(); ++i) words += r.out[i] == ' ' && std::isalpha(static_cast<unsigned char>(r.out[i + 1]));
  EXPECT_GE(common, 3) << r.out;
  EXPECT_GE(words, 25) << r.out;
  EXPECT_NE(r.out.find('.'), std::string::npos) << r.out;
  for (unsigned char ch : r.out) EXPECT_LT(ch, 0x80) << r.out;  // TinyStories is ASCII
}

}  // namespace
}  // namespace strata
