// Helpers shared by the tokenizer tests.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "formats/metadata.h"
#include "tokenizer/tokenizer.h"

namespace strata::test {

// Tokenizer of a GGUF file (vocab-only files included).
std::unique_ptr<Tokenizer> load_gguf_tokenizer(const std::string& path);

// Metadata of a small hand-made vocabulary.
struct HandVocab {
  std::string model = "llama";
  std::string pre;
  std::vector<std::string> tokens;
  std::vector<float> scores;   // empty: no scores key
  std::vector<int32_t> types;  // empty: no token_type key
  std::vector<std::string> merges;
  Metadata build() const;
};

// Runs `script` with Debian's python3 (packages python3-regex, unicode-data are required by the
// Makefile) feeding `input` on stdin; fails the test on a non-zero exit. Returns stdout.
std::string run_python(const std::string& script, const std::string& input);

// "1 2 3" / "1,2,3" -> ids.
std::vector<int32_t> parse_ids(const std::string& s);
std::string join_ids(const std::vector<int32_t>& ids);

}  // namespace strata::test
