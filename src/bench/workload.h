// The prompts of a benchmark: synthetic, shared-prefix, or read from a JSONL file.
//
// Synthetic prompts must have a known length in tokens without access to the server's
// tokenizer. They are made of common English words separated by single spaces, each word a
// single token (with its leading space) in the vocabularies of Llama/Mistral (SentencePiece),
// GPT-2, Falcon, MPT, StarCoder, DeepSeek and Phi-3 — the test suite checks this against those
// vocabularies — so a prompt of N words is N tokens, plus whatever special tokens (BOS) or chat
// template the server adds. The estimate is only used when the server does not report
// usage.prompt_tokens.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::bench {

struct BenchRequest {
  std::string prompt;
  int64_t estimated_prompt_tokens = 0;  // without special tokens or chat template
  int64_t max_tokens = 0;               // output length asked for (max_tokens)
};

struct SyntheticWorkload {
  int64_t num_prompts = 100;
  int64_t input_len = 128;   // unique words per prompt (after the shared prefix)
  int64_t output_len = 128;  // max_tokens
  // Lengths are drawn uniformly from [floor(L * (1 - r)), floor(L * (1 + r))], 0 <= r < 1.
  double range_ratio = 0.0;
  int64_t prefix_len = 0;  // words common to every prompt, placed before the unique part
  uint64_t seed = 0;
};

// The word list; every entry is one token in common vocabularies (see above).
const std::vector<std::string_view>& prompt_words();

// Throws strata::Error on invalid sizes.
std::vector<BenchRequest> make_synthetic_workload(const SyntheticWorkload& spec);

// A JSONL file, one object per line: {"prompt": "...", "output_len": N} ("max_tokens" is
// accepted for "output_len"; without either, default_output_len is used). Blank lines are
// skipped. num_prompts == 0 takes every line; more than the file holds cycles through it.
// The prompt's token count is estimated as max(words, ceil(bytes / 4)).
std::vector<BenchRequest> load_jsonl_workload(const std::string& path, int64_t num_prompts,
                                              int64_t default_output_len);

// The estimate used for free text (JSONL prompts).
int64_t estimate_text_tokens(std::string_view text);

}  // namespace strata::bench
