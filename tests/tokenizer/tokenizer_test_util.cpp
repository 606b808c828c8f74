#include "tokenizer_test_util.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/fixtures.h"
#include "formats/gguf_reader.h"

namespace strata::test {

std::unique_ptr<Tokenizer> load_gguf_tokenizer(const std::string& path) {
  const auto file = GgufFile::open(path);
  return Tokenizer::from_metadata(file->metadata());
}

Metadata HandVocab::build() const {
  Metadata md;
  md.add("tokenizer.ggml.model", GgufValue::of_string(model));
  if (!pre.empty()) md.add("tokenizer.ggml.pre", GgufValue::of_string(pre));
  GgufArray toks;
  toks.elem_type = GgufType::STRING;
  toks.strings = tokens;
  md.add("tokenizer.ggml.tokens", GgufValue::of_array(std::move(toks)));
  if (!scores.empty()) {
    GgufArray a;
    a.elem_type = GgufType::FLOAT32;
    a.f32 = scores;
    md.add("tokenizer.ggml.scores", GgufValue::of_array(std::move(a)));
  }
  if (!types.empty()) {
    GgufArray a;
    a.elem_type = GgufType::INT32;
    a.i32 = types;
    md.add("tokenizer.ggml.token_type", GgufValue::of_array(std::move(a)));
  }
  if (!merges.empty()) {
    GgufArray a;
    a.elem_type = GgufType::STRING;
    a.strings = merges;
    md.add("tokenizer.ggml.merges", GgufValue::of_array(std::move(a)));
  }
  return md;
}

std::string run_python(const std::string& script, const std::string& input) {
  char path[] = "/tmp/strata_tok_test_XXXXXX.py";
  const int fd = mkstemps(path, 3);
  if (fd < 0) throw std::runtime_error("mkstemps failed");
  FILE* f = fdopen(fd, "w");
  std::fwrite(script.data(), 1, script.size(), f);
  std::fclose(f);
  const CommandResult r = run_command({"/usr/bin/python3", path}, input);
  std::remove(path);
  EXPECT_EQ(r.exit_code, 0) << "python3 failed (needs Debian packages python3 python3-regex unicode-data):\n"
                            << r.err;
  return r.out;
}

std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  std::string cur;
  for (char c : s + " ") {
    if (c == '-' || (c >= '0' && c <= '9')) {
      cur += c;
    } else if (!cur.empty()) {
      ids.push_back(std::stoi(cur));
      cur.clear();
    }
  }
  return ids;
}

std::string join_ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
  return s;
}

}  // namespace strata::test
