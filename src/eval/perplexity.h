// Perplexity of a model over a text, evaluated window by window (see eval_windows.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "eval/eval_windows.h"
#include "kv/kv_evict_policy.h"
#include "kv/kv_window_policy.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace strata::eval {

// The whole text tokenized once, with BOS/EOS as the vocabulary says (llama-perplexity does the
// same). Throws strata::Error for an empty text.
std::vector<int32_t> tokenize_eval_text(const Tokenizer& tok, std::string_view text);

// The token that replaces the first token of every window: BOS when the vocabulary adds one,
// else -1 (windows are used as they are).
int32_t window_bos(const Tokenizer& tok);

struct EvalProgress {
  int64_t windows_done = 0;
  int64_t n_windows = 0;
  int64_t tokens_scored = 0;
  double running_ppl = 0.0;   // perplexity so far (kld: the model's, or the base's without one)
  double running_kld = -1.0;  // mean KL divergence so far; < 0 when not measured
};
using ProgressFn = std::function<void(const EvalProgress&)>;

struct PerplexityResult {
  double ppl = 0.0;
  double ppl_stderr = 0.0;     // standard error propagated from the NLL's
  double nll_mean = 0.0;       // mean negative log-likelihood (nats per token)
  double nll_stderr = 0.0;     // standard error of nll_mean
  double top1_accuracy = 0.0;  // % of scored tokens that were the model's argmax
  int64_t n_tokens = 0;        // scored tokens
  int64_t n_windows = 0;
  int64_t n_text_tokens = 0;  // tokens in the whole text
  int64_t n_ctx = 0;
  int64_t stride = 0;
};

// Evaluates every window of `plan` over `text` (token ids, validated by the engine) with a KV
// cache of kv_type.
PerplexityResult evaluate_perplexity(Model& model, const std::vector<int32_t>& text, const WindowPlan& plan,
                                     const KvCacheType& kv_type = {}, const ProgressFn& progress = {},
                                     const KvWindowPolicy& kv_window = {},
                                     const KvEvictPolicy& kv_evict = {});

}  // namespace strata::eval
