// `strata tokenize` / `strata detokenize` end to end, against the llama.cpp test vectors.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "common/fixtures.h"
#include "tokenizer_test_util.h"

namespace strata::test {
namespace {

const std::string kSpm = "vocab/ggml-vocab-llama-spm.gguf";

// Expected ids of an input case of a vocab's .inp/.out pair.
std::string expected_ids(const std::string& vocab, const std::string& text) {
  const std::string inp = read_file(shared_path(vocab + ".inp"));
  std::istringstream out(read_file(shared_path(vocab + ".out")));
  const std::string sep = "\n__ggml_vocab_test__\n";
  size_t pos = 0;
  for (std::string line; std::getline(out, line);) {
    const size_t hit = inp.find(sep, pos);
    if (inp.substr(pos, hit - pos) == text) return join_ids(parse_ids(line));
    pos = hit + sep.size();
  }
  ADD_FAILURE() << "no case '" << text << "'";
  return {};
}

CommandResult strata(std::vector<std::string> args) {
  args.insert(args.begin(), strata_binary());
  return run_command(args);
}

TEST(CliTokenize, PrintsIdsOnOneLine) {
  const CommandResult r = strata({"tokenize", "-m", shared_path(kSpm), "-p", "Hello world"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, expected_ids(kSpm, "Hello world") + "\n");
  const CommandResult with_bos =
      strata({"tokenize", "-m", shared_path(kSpm), "-p", "Hello world", "--add-special"});
  EXPECT_EQ(with_bos.out, "1 " + expected_ids(kSpm, "Hello world") + "\n");
}

TEST(CliTokenize, ReadsFiles) {
  const std::string text = "    Hello\n    Hello";
  char path[] = "/tmp/strata_tok_cli_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  FILE* f = fdopen(fd, "w");
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  const std::string gpt2 = "vocab/ggml-vocab-gpt-2.gguf";
  const CommandResult r = strata({"tokenize", "-m", shared_path(gpt2), "-f", path});
  std::remove(path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, expected_ids(gpt2, text) + "\n");
}

TEST(CliTokenize, ParseSpecialAndHuggingFaceDirectories) {
  const CommandResult plain =
      strata({"tokenize", "-m", shared_path("vocab/ggml-vocab-gpt-2.gguf"), "-p", "<|endoftext|>"});
  EXPECT_NE(plain.out, "50256\n");
  const CommandResult special = strata({"tokenize", "-m", shared_path("vocab/ggml-vocab-gpt-2.gguf"), "-p",
                                        "<|endoftext|>", "--parse-special"});
  EXPECT_EQ(special.out, "50256\n");
  const CommandResult hf = strata(
      {"tokenize", "-m", shared_path("models/tinystories656k"), "-p", "Once upon a time", "--add-special"});
  ASSERT_EQ(hf.exit_code, 0) << hf.err;
  EXPECT_EQ(hf.out, "1 80 147 201 282 57\n");
}

TEST(CliDetokenize, PrintsText) {
  const std::string ids = expected_ids(kSpm, "Hello world");
  std::string csv = ids;
  std::replace(csv.begin(), csv.end(), ' ', ',');
  CommandResult r = strata({"detokenize", "-m", shared_path(kSpm), "--ids", "1," + csv});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Hello world\n");
  r = strata({"detokenize", "-m", shared_path(kSpm), "--ids", "1," + csv, "--render-special"});
  EXPECT_EQ(r.out, "<s>Hello world\n");
  // A lone byte token is not valid UTF-8: printed as U+FFFD.
  r = strata({"detokenize", "-m", shared_path(kSpm), "--ids", "231"});  // <0xE4>
  EXPECT_EQ(r.out, "\xEF\xBF\xBD\n");
}

TEST(CliTokenize, ErrorsAreOneLine) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"tokenize", "-m", shared_path(kSpm)},
        {"tokenize", "-m", "/no/such/model.gguf", "-p", "x"},
        {"tokenize", "-m", shared_path(kSpm), "-f", "/no/such/file"},
        {"detokenize", "-m", shared_path(kSpm), "--ids", "1,x"},
        {"detokenize", "-m", shared_path(kSpm), "--ids", "32000"},
        {"detokenize", "-m", shared_path(kSpm), "--ids", "99999999999"}}) {
    const CommandResult r = strata(args);
    EXPECT_NE(r.exit_code, 0) << args[0];
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("error"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace strata::test
