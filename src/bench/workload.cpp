#include "bench/workload.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench/random.h"
#include "core/check.h"

namespace strata::bench {
namespace {

// Bounds that keep a typo from allocating gigabytes.
constexpr int64_t kMaxPrompts = 10'000'000;
constexpr int64_t kMaxWords = 1'000'000;

std::string random_words(Random& rng, int64_t count) {
  const auto& words = prompt_words();
  std::string text;
  text.reserve(static_cast<size_t>(count) * 5);
  for (int64_t i = 0; i < count; ++i) {
    if (i > 0) text += ' ';
    text += words[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(words.size()) - 1))];
  }
  return text;
}

int64_t draw_length(Random& rng, int64_t len, double range_ratio, int64_t minimum) {
  const auto lo = static_cast<int64_t>(std::floor(static_cast<double>(len) * (1.0 - range_ratio)));
  const auto hi = static_cast<int64_t>(std::floor(static_cast<double>(len) * (1.0 + range_ratio)));
  return std::max(minimum, rng.uniform_int(lo, std::max(lo, hi)));
}

int64_t output_len_field(const nlohmann::json& obj, int64_t fallback, const std::string& where) {
  for (const char* key : {"output_len", "max_tokens"}) {
    auto it = obj.find(key);
    if (it == obj.end()) continue;
    if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > kMaxWords)
      STRATA_THROW(where, ": \"", key, "\" must be an integer in [1, ", kMaxWords, "]");
    return it->get<int64_t>();
  }
  return fallback;
}

}  // namespace

const std::vector<std::string_view>& prompt_words() {
  static const std::vector<std::string_view> words = {
      "the",  "of",  "and", "to",  "in",   "is",    "was",   "for",  "on",   "with", "as",  "at",
      "by",   "it",  "he",  "she", "they", "we",    "you",   "this", "that", "from", "had", "has",
      "have", "not", "but", "are", "be",   "or",    "an",    "his",  "her",  "one",  "all", "so",
      "if",   "no",  "do",  "can", "will", "about", "there", "time", "day",  "way",  "man", "year"};
  return words;
}

std::vector<BenchRequest> make_synthetic_workload(const SyntheticWorkload& spec) {
  if (spec.num_prompts < 1 || spec.num_prompts > kMaxPrompts)
    STRATA_THROW("--num-prompts must be in [1, ", kMaxPrompts, "]");
  if (spec.input_len < 1 || spec.input_len > kMaxWords)
    STRATA_THROW("--input-len must be in [1, ", kMaxWords, "]");
  if (spec.output_len < 1 || spec.output_len > kMaxWords)
    STRATA_THROW("--output-len must be in [1, ", kMaxWords, "]");
  if (spec.prefix_len < 0 || spec.prefix_len > kMaxWords)
    STRATA_THROW("--prefix-len must be in [0, ", kMaxWords, "]");
  if (!(spec.range_ratio >= 0.0 && spec.range_ratio < 1.0)) STRATA_THROW("--range-ratio must be in [0, 1)");
  Random rng(spec.seed);
  const std::string prefix = random_words(rng, spec.prefix_len);
  std::vector<BenchRequest> requests;
  requests.reserve(static_cast<size_t>(spec.num_prompts));
  for (int64_t i = 0; i < spec.num_prompts; ++i) {
    BenchRequest r;
    const int64_t unique_len = draw_length(rng, spec.input_len, spec.range_ratio, 1);
    r.max_tokens = draw_length(rng, spec.output_len, spec.range_ratio, 1);
    r.prompt = prefix;
    if (!prefix.empty()) r.prompt += ' ';
    r.prompt += random_words(rng, unique_len);
    r.estimated_prompt_tokens = spec.prefix_len + unique_len;
    requests.push_back(std::move(r));
  }
  return requests;
}

int64_t estimate_text_tokens(std::string_view text) {
  int64_t words = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  const auto by_bytes = static_cast<int64_t>((text.size() + 3) / 4);
  return std::max(words, by_bytes);
}

std::vector<BenchRequest> load_jsonl_workload(const std::string& path, int64_t num_prompts,
                                              int64_t default_output_len) {
  if (num_prompts < 0 || num_prompts > kMaxPrompts)
    STRATA_THROW("--num-prompts must be in [0, ", kMaxPrompts, "]");
  if (default_output_len < 1 || default_output_len > kMaxWords)
    STRATA_THROW("--output-len must be in [1, ", kMaxWords, "]");
  std::ifstream in(path);
  if (!in) STRATA_THROW("cannot open dataset ", path);
  std::vector<BenchRequest> file_requests;
  std::string line;
  for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(line_no);
    nlohmann::json obj = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!obj.is_object()) STRATA_THROW(where, ": not a JSON object");
    auto prompt = obj.find("prompt");
    if (prompt == obj.end() || !prompt->is_string() || prompt->get_ref<const std::string&>().empty())
      STRATA_THROW(where, ": missing non-empty string \"prompt\"");
    BenchRequest r;
    r.prompt = prompt->get<std::string>();
    r.estimated_prompt_tokens = estimate_text_tokens(r.prompt);
    r.max_tokens = output_len_field(obj, default_output_len, where);
    file_requests.push_back(std::move(r));
  }
  if (file_requests.empty()) STRATA_THROW("dataset ", path, " holds no prompts");
  if (num_prompts == 0) return file_requests;
  std::vector<BenchRequest> requests;
  requests.reserve(static_cast<size_t>(num_prompts));
  for (int64_t i = 0; i < num_prompts; ++i)
    requests.push_back(file_requests[static_cast<size_t>(i) % file_requests.size()]);
  return requests;
}

}  // namespace strata::bench
