#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "core/check.h"

namespace strata {
namespace {

int32_t argmax(const float* x, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

uint64_t random_seed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace

Sampler::Sampler(const SamplingParams& params, int32_t n_vocab)
    : params_(params),
      n_vocab_(n_vocab),
      rng_(params.seed ? *params.seed : random_seed()),
      in_prompt_(static_cast<size_t>(n_vocab), 0),
      work_(static_cast<size_t>(n_vocab)),
      order_(static_cast<size_t>(n_vocab)) {
  params_.validate(n_vocab);
}

void Sampler::set_prompt(const std::vector<int32_t>& prompt) {
  for (int32_t t : prompt)
    if (t >= 0 && t < n_vocab_) in_prompt_[static_cast<size_t>(t)] = 1;
}

void Sampler::accept(int32_t token) {
  STRATA_CHECK(token >= 0 && token < n_vocab_);
  ++generated_counts_[token];
  in_prompt_[static_cast<size_t>(token)] = 1;
}

void Sampler::apply_penalties_and_bias(std::vector<float>& logits) const {
  if (params_.repetition_penalty != 1.0f) {
    const float rp = params_.repetition_penalty;
    for (int32_t i = 0; i < n_vocab_; ++i) {
      if (!in_prompt_[static_cast<size_t>(i)]) continue;
      float& l = logits[static_cast<size_t>(i)];
      l = l > 0.0f ? l / rp : l * rp;
    }
  }
  for (const auto& [token, count] : generated_counts_) {
    logits[static_cast<size_t>(token)] -=
        params_.frequency_penalty * static_cast<float>(count) + params_.presence_penalty;
  }
  for (const auto& [token, bias] : params_.logit_bias) logits[static_cast<size_t>(token)] += bias;
}

int32_t Sampler::sample(const float* logits) {
  std::copy(logits, logits + n_vocab_, work_.begin());
  if (constraint_) {
    allowed_.assign(static_cast<size_t>(n_vocab_), 1);
    constraint_->mask(allowed_.data());
    bool any = false;
    for (int32_t i = 0; i < n_vocab_; ++i) {
      if (allowed_[static_cast<size_t>(i)])
        any = true;
      else
        work_[static_cast<size_t>(i)] = -std::numeric_limits<float>::infinity();
    }
    if (!any) return kNoToken;
  }
  apply_penalties_and_bias(work_);
  const int32_t token = params_.greedy() ? argmax(work_.data(), n_vocab_) : draw(work_);
  if (constraint_ && !allowed_[static_cast<size_t>(token)]) {
    // Every allowed token had a logit of -inf: any allowed one will do.
    return static_cast<int32_t>(std::find(allowed_.begin(), allowed_.end(), 1) - allowed_.begin());
  }
  return token;
}

// Temperature, then top-k, top-p and min-p on the sorted candidates, then one uniform draw.
int32_t Sampler::draw(std::vector<float>& logits) {
  const float inv_t = 1.0f / params_.temperature;
  const float max_l = logits[static_cast<size_t>(argmax(logits.data(), n_vocab_))];
  // Unnormalized probabilities; the max is 1.
  double total = 0.0;
  for (float& l : logits) {
    l = std::isfinite(l) ? std::exp((l - max_l) * inv_t) : 0.0f;
    total += l;
  }
  std::iota(order_.begin(), order_.end(), 0);
  auto by_prob = [&](int32_t a, int32_t b) {
    const float pa = logits[static_cast<size_t>(a)], pb = logits[static_cast<size_t>(b)];
    return pa > pb || (pa == pb && a < b);
  };
  int32_t n = n_vocab_;
  if (params_.top_k > 0) n = std::min(n, params_.top_k);
  // Sort just enough of the candidates: grow the sorted prefix until top-p is covered.
  int32_t sorted = 0;
  auto sort_prefix = [&](int32_t want) {
    want = std::min(want, n_vocab_);
    if (want <= sorted) return;
    std::partial_sort(order_.begin() + sorted, order_.begin() + want, order_.end(), by_prob);
    sorted = want;
  };
  sort_prefix(std::min(n, 64));
  if (params_.top_p < 1.0f) {
    double cum = 0.0;
    int32_t keep = 0;
    for (;;) {
      while (keep < sorted && keep < n) {
        cum += logits[static_cast<size_t>(order_[static_cast<size_t>(keep)])] / total;
        ++keep;
        if (cum >= params_.top_p) break;
      }
      if (cum >= params_.top_p || keep >= n) break;
      sort_prefix(std::min(n, sorted * 8));
    }
    n = keep;
  } else {
    sort_prefix(n);
  }
  if (params_.min_p > 0.0f) {
    const float floor_p = params_.min_p * logits[static_cast<size_t>(order_[0])];
    int32_t keep = 1;
    while (keep < n && logits[static_cast<size_t>(order_[static_cast<size_t>(keep)])] >= floor_p) ++keep;
    n = keep;
  }
  double mass = 0.0;
  for (int32_t i = 0; i < n; ++i) mass += logits[static_cast<size_t>(order_[static_cast<size_t>(i)])];
  double r = rng_.uniform() * mass;
  for (int32_t i = 0; i < n; ++i) {
    r -= logits[static_cast<size_t>(order_[static_cast<size_t>(i)])];
    if (r < 0.0) return order_[static_cast<size_t>(i)];
  }
  return order_[static_cast<size_t>(n - 1)];
}

float token_logprob(const float* logits, int32_t n_vocab, int32_t token) {
  const float mx = *std::max_element(logits, logits + n_vocab);
  double sum = 0.0;
  for (int32_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  return static_cast<float>(logits[token] - mx - std::log(sum));
}

std::vector<TokenLogprob> top_logprobs(const float* logits, int32_t n_vocab, int32_t k) {
  const float mx = *std::max_element(logits, logits + n_vocab);
  double sum = 0.0;
  for (int32_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  const float log_z = mx + static_cast<float>(std::log(sum));
  k = std::clamp(k, 0, n_vocab);
  std::vector<int32_t> ids(static_cast<size_t>(n_vocab));
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  std::vector<TokenLogprob> out;
  for (int32_t i = 0; i < k; ++i) out.push_back({ids[static_cast<size_t>(i)], logits[ids[static_cast<size_t>(i)]] - log_z});
  return out;
}

}  // namespace strata
