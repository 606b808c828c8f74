// Turns logits into the next token: penalties, logit bias, an allowed-token mask (structured
// output), temperature, top-k, top-p, min-p and a seeded draw.
//
// The sampler is a pure function of (seed, accepted tokens, logits): the uniform number behind
// the draw at output position j is a hash of (seed, j), not the next value of a stream, so a
// step that verifies several speculative tokens at once draws exactly what one-token steps would
// have drawn, and only accept() advances the state (penalty history, position).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sampling/sampling_params.h"
#include "sampling/token_constraint.h"

namespace strata {

// The final distribution a token is drawn from, after every transform of the request:
// candidates in decreasing probability (ties: lower id first), probabilities summing to 1.
struct TokenDistribution {
  std::vector<int32_t> tokens;  // [n_candidates]
  std::vector<float> probs;     // [n_candidates]

  // Probability of `token` (0 when it is not a candidate).
  float prob_of(int32_t token) const;
  // Inverse CDF over the candidates in order: the token whose cumulative interval holds u in [0, 1).
  int32_t draw(double u) const;
};

// Independent uniform streams of one output position.
enum class RandomStream : uint64_t { Draw = 0, Accept = 1, Draft = 2 };

class Sampler {
 public:
  Sampler(const SamplingParams& params, int32_t n_vocab);

  // Tokens the repetition penalty sees (the prompt); generated tokens are added by accept().
  void set_prompt(const std::vector<int32_t>& prompt);
  // Records a generated token: penalties and the output position advance.
  void accept(int32_t token);
  // The distribution of the next token. logits: [n_vocab] (not modified); allowed: [n_vocab]
  // 0/1 mask of tokens that may come next, or null for all. At least one token must be allowed.
  void distribution(const float* logits, const uint8_t* allowed, TokenDistribution& out);
  // Chooses the next token: argmax when greedy, else distribution().draw(uniform(Draw)).
  int32_t sample(const float* logits, const uint8_t* allowed = nullptr);
  // The uniform number of `stream` at the current output position (+ ahead), in [0, 1).
  double uniform(RandomStream stream, int64_t ahead = 0) const;

  const SamplingParams& params() const { return params_; }
  int64_t n_accepted() const { return n_accepted_; }

 private:
  void penalized_logits(const float* logits, const uint8_t* allowed);
  void truncated_distribution(TokenDistribution& out);

  SamplingParams params_;
  int32_t n_vocab_;
  uint64_t seed_;
  int64_t n_accepted_ = 0;
  std::unordered_map<int32_t, int32_t> generated_counts_;
  std::vector<uint8_t> in_prompt_;  // [n_vocab] token seen in prompt or output
  std::vector<float> work_;         // [n_vocab]
  std::vector<int32_t> order_;      // [n_vocab]
  TokenDistribution scratch_;
};

// Log-probability of `token` and the `k` most likely tokens under softmax(logits).
struct TokenLogprob {
  int32_t token;
  float logprob;
};
std::vector<TokenLogprob> top_logprobs(const float* logits, int32_t n_vocab, int32_t k);
float token_logprob(const float* logits, int32_t n_vocab, int32_t token);

}  // namespace strata
