// Turns logits into the next token: penalties, logit bias, temperature, top-k, top-p, min-p
// and a seeded draw (same seed, same logits => same tokens).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sampling/rng.h"
#include "sampling/sampling_params.h"
#include "sampling/token_constraint.h"

namespace strata {

class Sampler {
 public:
  Sampler(const SamplingParams& params, int32_t n_vocab);

  // Tokens the repetition penalty sees (the prompt); generated tokens are added by accept().
  void set_prompt(const std::vector<int32_t>& prompt);
  // Records a generated token (for the penalties).
  void accept(int32_t token);
  // Chooses the next token from logits: [n_vocab] (not modified). With a constraint, only
  // tokens it allows can be chosen (the others are -inf before penalties, top-k/p and greedy
  // argmax); kNoToken when it allows none.
  int32_t sample(const float* logits);
  static constexpr int32_t kNoToken = -1;

  // Structured output: the constraint whose mask sample() applies (not owned; nullptr: none).
  // The caller advances it with the tokens it keeps.
  void set_constraint(TokenConstraint* constraint) { constraint_ = constraint; }

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
  TokenConstraint* constraint_ = nullptr;
  std::vector<uint8_t> allowed_;  // [n_vocab] the constraint's mask
};

// Log-probability of `token` and the `k` most likely tokens under softmax(logits).
struct TokenLogprob {
  int32_t token;
  float logprob;
};
std::vector<TokenLogprob> top_logprobs(const float* logits, int32_t n_vocab, int32_t k);
float token_logprob(const float* logits, int32_t n_vocab, int32_t token);

}  // namespace strata
