// llama2.c's own greedy output (run stories260K.bin -z tok512.bin -t 0.0 -n 200), reproduced
// byte for byte from both the llama2.c checkpoint and the GGUF conversion, through the CLI.
#include <gtest/gtest.h>

#include "common/fixtures.h"

namespace strata {
namespace {

std::string strip_one_newline(std::string s) {
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

TEST(Llama2cGolden, GreedyTextFromEmptyPrompt) {
  const std::string golden =
      strip_one_newline(test::read_file(test::shared_path("reference/stories260K-llama2c-greedy200.txt")));
  const std::string dir = test::shared_path("models/stories260K/");
  // llama2.c's -n 200 runs 200 steps from BOS and prints the token sampled at each: 200 tokens.
  for (const std::vector<std::string>& model_args :
       {std::vector<std::string>{"-m", dir + "stories260K.bin", "--tokenizer", dir + "tok512.bin"},
        std::vector<std::string>{"-m", dir + "stories260K.gguf"}}) {
    std::vector<std::string> argv = {test::strata_binary(), "run"};
    argv.insert(argv.end(), model_args.begin(), model_args.end());
    for (const char* a : {"-p", "", "-n", "200", "--temp", "0", "-t", "1"}) argv.push_back(a);
    const auto r = test::run_command(argv);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(strip_one_newline(r.out), golden) << model_args[1];
  }
}

}  // namespace
}  // namespace strata
