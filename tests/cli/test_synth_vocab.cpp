// `strata synth --vocab`: a random-weight model carrying a real tokenizer (the structured-output
// benchmark needs a real vocabulary's pieces).
#include <gtest/gtest.h>

#include <filesystem>

#include "common/fixtures.h"
#include "formats/gguf_reader.h"
#include "tokenizer/tokenizer.h"

namespace strata {
namespace {

TEST(SynthVocab, TakesTheTokenizerOfAnotherGguf) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("strata_synth_vocab_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "m.gguf").string();
  const std::string vocab = test::shared_path("models/stories260K/stories260K.gguf");
  const auto r = test::run_command({test::strata_binary(), "synth", "--preset", "synth-tiny", "--type", "f32",
                                    "--vocab", vocab, "-o", out, "-t", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto written = Tokenizer::from_metadata(GgufFile::open(out)->metadata());
  const auto original = Tokenizer::from_metadata(GgufFile::open(vocab)->metadata());
  ASSERT_EQ(written->n_vocab(), original->n_vocab());
  for (int32_t id = 0; id < original->n_vocab(); ++id)
    ASSERT_EQ(written->token_text(id), original->token_text(id));
  EXPECT_EQ(written->encode("Once upon a time", true, false),
            original->encode("Once upon a time", true, false));
  // The model itself is the synth-tiny shape.
  const auto f = GgufFile::open(out);
  EXPECT_EQ(*f->metadata().find("general.name")->as_string(), "strata-synth-synth-tiny");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace strata
