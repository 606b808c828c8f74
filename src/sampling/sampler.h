// Turns logits into the next token: penalties, logit bias, temperature, top-k, top-p, min-p
// and a seeded draw (same seed, same logits => same tokens).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sampling/rng.h"
#include "sampling/sampling_params.h"

namespace strata {

class Sampler {
 public:
  Sampler(const SamplingParams& params, int32_t n_vocab);

  // Tokens the repetition penalty sees (the prompt); generated tokens are added by accept().
  void set_prompt(const std::vector<int32_t>& prompt);
  // Records a generated token (for the penalties).
  void accept(int32_t token);
  // Chooses the next token from logits: [n_vocab] (not modified).
  int32_t sample(const float* logits);

  const SamplingParams& params() const { return params_; }

 private:
  void apply_penalties_and_bias(std::vector<float>& logits) const;
  int32_t draw(std::vector<float>& logits);

  SamplingParams params_;
  int32_t n_vocab_;
  Rng rng_;
  std::unordered_map<int32_t, int32_t> generated_counts_;
  std::vector<uint8_t> in_prompt_;  // [n_vocab] token seen in prompt or output
  std::vector<float> work_;         // [n_vocab]
  std::vector<int32_t> order_;      // [n_vocab]
};

// Log-probability of `token` and the `k` most likely tokens under softmax(logits).
struct TokenLogprob {
  int32_t token;
  float logprob;
};
std::vector<TokenLogprob> top_logprobs(const float* logits, int32_t n_vocab, int32_t k);
float token_logprob(const float* logits, int32_t n_vocab, int32_t token);

}  // namespace strata
