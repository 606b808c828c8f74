// Workloads: synthetic lengths, shared prefixes, JSONL files, and the claim that every prompt
// word is one token in common vocabularies (checked against the vocab GGUFs made by llama.cpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "bench/workload.h"
#include "common/fixtures.h"
#include "core/check.h"

namespace strata::bench {
namespace {

int64_t word_count(const std::string& s) {
  std::istringstream in(s);
  std::string w;
  int64_t n = 0;
  while (in >> w) ++n;
  return n;
}

TEST(SyntheticWorkload, FixedLengths) {
  SyntheticWorkload spec;
  spec.num_prompts = 20;
  spec.input_len = 37;
  spec.output_len = 11;
  const auto reqs = make_synthetic_workload(spec);
  ASSERT_EQ(reqs.size(), 20u);
  const std::set<std::string_view> vocab(prompt_words().begin(), prompt_words().end());
  std::set<std::string> distinct;
  for (const auto& r : reqs) {
    EXPECT_EQ(word_count(r.prompt), 37);
    EXPECT_EQ(r.estimated_prompt_tokens, 37);
    EXPECT_EQ(r.max_tokens, 11);
    EXPECT_EQ(r.prompt.find("  "), std::string::npos);  // single spaces only
    std::istringstream in(r.prompt);
    for (std::string w; in >> w;) EXPECT_TRUE(vocab.count(w)) << w;
    distinct.insert(r.prompt);
  }
  EXPECT_EQ(distinct.size(), 20u);  // no accidental sharing between prompts
}

TEST(SyntheticWorkload, RangeRatioSpreadsLengths) {
  SyntheticWorkload spec;
  spec.num_prompts = 400;
  spec.input_len = 100;
  spec.output_len = 20;
  spec.range_ratio = 0.5;
  std::set<int64_t> in_lens, out_lens;
  for (const auto& r : make_synthetic_workload(spec)) {
    EXPECT_GE(r.estimated_prompt_tokens, 50);
    EXPECT_LE(r.estimated_prompt_tokens, 150);
    EXPECT_EQ(word_count(r.prompt), r.estimated_prompt_tokens);
    EXPECT_GE(r.max_tokens, 10);
    EXPECT_LE(r.max_tokens, 30);
    in_lens.insert(r.estimated_prompt_tokens);
    out_lens.insert(r.max_tokens);
  }
  EXPECT_GT(in_lens.size(), 60u);  // 101 possible values
  EXPECT_EQ(*in_lens.begin(), 50);
  EXPECT_EQ(*in_lens.rbegin(), 150);
  EXPECT_EQ(out_lens.size(), 21u);
}

TEST(SyntheticWorkload, SharedPrefix) {
  SyntheticWorkload spec;
  spec.num_prompts = 10;
  spec.input_len = 8;
  spec.prefix_len = 30;
  const auto reqs = make_synthetic_workload(spec);
  // The first 30 words are identical everywhere; the rest differ.
  auto first_words = [](const std::string& s, int n) {
    size_t pos = 0;
    for (int i = 0; i < n; ++i) pos = s.find(' ', pos) + 1;
    return s.substr(0, pos);
  };
  std::set<std::string> prefixes, suffixes;
  for (const auto& r : reqs) {
    EXPECT_EQ(word_count(r.prompt), 38);
    EXPECT_EQ(r.estimated_prompt_tokens, 38);
    prefixes.insert(first_words(r.prompt, 30));
    suffixes.insert(r.prompt.substr(first_words(r.prompt, 30).size()));
  }
  EXPECT_EQ(prefixes.size(), 1u);
  EXPECT_EQ(suffixes.size(), 10u);
}

TEST(SyntheticWorkload, SeedReproducesAndInvalidSpecsThrow) {
  SyntheticWorkload spec;
  spec.num_prompts = 3;
  spec.seed = 4;
  EXPECT_EQ(make_synthetic_workload(spec)[2].prompt, make_synthetic_workload(spec)[2].prompt);
  SyntheticWorkload other = spec;
  other.seed = 5;
  EXPECT_NE(make_synthetic_workload(spec)[0].prompt, make_synthetic_workload(other)[0].prompt);
  for (auto mutate : std::vector<void (*)(SyntheticWorkload&)>{
           [](SyntheticWorkload& s) { s.num_prompts = 0; }, [](SyntheticWorkload& s) { s.input_len = 0; },
           [](SyntheticWorkload& s) { s.output_len = -3; }, [](SyntheticWorkload& s) { s.range_ratio = 1.0; },
           [](SyntheticWorkload& s) { s.prefix_len = -1; },
           [](SyntheticWorkload& s) { s.input_len = 1LL << 40; }}) {
    SyntheticWorkload bad = spec;
    mutate(bad);
    EXPECT_THROW(make_synthetic_workload(bad), Error);
  }
}

class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    path_ = (std::filesystem::temp_directory_path() /
             ("strata_bench_" + std::to_string(getpid()) + "_" + std::to_string(counter_++) + ".jsonl"))
                .string();
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

TEST(JsonlWorkload, ReadsPromptsAndOutputLengths) {
  TempFile f(
      "{\"prompt\": \"Hello world\", \"output_len\": 7}\n\n  \n{\"prompt\": \"abcdefghijklmnop\", "
      "\"max_tokens\": 3}\n{\"prompt\": \"x\"}\n");
  auto reqs = load_jsonl_workload(f.path(), 0, 42);
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].prompt, "Hello world");
  EXPECT_EQ(reqs[0].max_tokens, 7);
  EXPECT_EQ(reqs[0].estimated_prompt_tokens, 3);  // max(2 words, ceil(11 / 4))
  EXPECT_EQ(reqs[1].max_tokens, 3);
  EXPECT_EQ(reqs[1].estimated_prompt_tokens, 4);  // 16 bytes / 4
  EXPECT_EQ(reqs[2].max_tokens, 42);              // the default
  // More prompts than lines cycle through the file.
  reqs = load_jsonl_workload(f.path(), 7, 42);
  ASSERT_EQ(reqs.size(), 7u);
  EXPECT_EQ(reqs[3].prompt, "Hello world");
  EXPECT_EQ(reqs[6].prompt, "Hello world");
  EXPECT_EQ(load_jsonl_workload(f.path(), 2, 42).size(), 2u);
}

TEST(JsonlWorkload, ErrorsNameTheLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"prompt\": \"ok\"}\nnot json\n", ":2: not a JSON object"},
      {"{\"text\": \"no prompt\"}\n", ":1: missing"},
      {"{\"prompt\": \"\"}\n", ":1: missing"},
      {"{\"prompt\": \"a\", \"output_len\": 0}\n", "output_len"},
      {"{\"prompt\": \"a\", \"output_len\": \"5\"}\n", "output_len"},
      {"\n\n", "holds no prompts"},
  };
  for (const auto& [text, expected] : cases) {
    TempFile f(text);
    try {
      load_jsonl_workload(f.path(), 0, 8);
      ADD_FAILURE() << "no error for " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(load_jsonl_workload("/nonexistent/file.jsonl", 0, 8), Error);
}

// Reads tokenizer.ggml.tokens from a GGUF with a tiny independent Python reader and checks that
// every prompt word, with a leading space marker (SentencePiece "\u2581" or byte-level BPE
// "\u0120"), is a single vocabulary entry, and that no entry spans two words.
const char* kVocabCheck = R"PY(
import struct, sys
def tokens(path):
    f = open(path, 'rb').read(); off = 0
    def take(fmt):
        nonlocal off; v = struct.unpack_from(fmt, f, off)[0]; off += struct.calcsize(fmt); return v
    def string():
        nonlocal off; n = take('<Q'); v = f[off:off + n]; off += n; return v.decode('utf-8', 'replace')
    fixed = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    def value(t):
        nonlocal off
        if t == 8: return string()
        if t == 9:
            et = take('<I'); n = take('<Q'); return [value(et) for _ in range(n)]
        off += fixed[t]; return None
    assert f[:4] == b'GGUF'; off = 4; take('<I'); take('<Q'); n_kv = take('<Q')
    for _ in range(n_kv):
        key = string(); t = take('<I'); v = value(t)
        if key == 'tokenizer.ggml.tokens': return v
    raise SystemExit('no tokens in ' + path)
words = sys.argv[2].split(',')
vocab = tokens(sys.argv[1]); ids = set(vocab)
missing = [w for w in words if '\u2581' + w not in ids and '\u0120' + w not in ids]
marks = ('\u2581', '\u0120')
starts = {a + w + b for a in marks for b in marks for w in words}
lengths = {len(x) for x in starts}
spanning = [t for t in vocab if any(t[:n] in starts for n in lengths)]
print('missing', missing, 'spanning', spanning[:5])
sys.exit(1 if missing or spanning else 0)
)PY";

TEST(PromptWords, EachWordIsOneTokenInCommonVocabularies) {
  std::string words;
  for (auto w : prompt_words()) words += (words.empty() ? "" : ",") + std::string(w);
  for (const char* name : {"llama-spm", "gpt-2", "falcon", "mpt", "starcoder", "deepseek-llm", "phi-3"}) {
    const std::string vocab = test::shared_path(std::string("vocab/ggml-vocab-") + name + ".gguf");
    const auto result = test::run_command({"/usr/bin/python3", "-c", kVocabCheck, vocab, words});
    EXPECT_EQ(result.exit_code, 0) << name << ": " << result.out << result.err;
  }
}

}  // namespace
}  // namespace strata::bench
