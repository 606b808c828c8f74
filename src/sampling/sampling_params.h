// How the next token is chosen from the logits (OpenAI / vLLM / llama.cpp parameters).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace strata {

struct SamplingParams {
  float temperature = 1.0f;                           // 0: greedy
  int32_t top_k = 0;                                  // 0: off
  float top_p = 1.0f;                                 // 1: off
  float min_p = 0.0f;                                 // 0: off
  float repetition_penalty = 1.0f;                    // 1: off; applied to prompt and generated tokens (vLLM)
  float frequency_penalty = 0.0f;                     // OpenAI: minus count * f, over generated tokens
  float presence_penalty = 0.0f;                      // OpenAI: minus p if the token was generated
  std::vector<std::pair<int32_t, float>> logit_bias;  // added to the logits
  std::optional<uint64_t> seed;                       // unset: random

  bool greedy() const { return temperature <= 1e-6f; }
  // Throws strata::Error naming the first parameter out of range.
  void validate(int32_t n_vocab) const;
};

}  // namespace strata
