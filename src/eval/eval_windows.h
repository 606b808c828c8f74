// How a tokenized text is cut into evaluation windows (llama-perplexity's convention).
//
// Window w covers tokens [start, start + n_ctx) with start = w * stride. Its first token is
// replaced by BOS when the vocabulary adds one, so every window is scored as a fresh document.
// The logits row at window position j predicts the token at position j + 1. A window scores its
// last n_score predictions, rows [n_ctx - 1 - n_score, n_ctx - 1), where
//     n_score = min(n_ctx - 1 - n_ctx / 2, stride):
// - stride >= n_ctx / 2 (the default stride = n_ctx gives non-overlapping windows): the second
//   half of each window, exactly llama-perplexity's rows [n_ctx / 2, n_ctx - 1), so every scored
//   token sees at least n_ctx / 2 tokens of context;
// - a smaller stride: the last `stride` predictions, so consecutive windows score consecutive,
//   disjoint runs of tokens, each with at least n_ctx - stride tokens of context (llama.cpp's
//   --ppl-stride mode).
// Tokens before the first scored row of the first window are never scored.
#pragma once

#include <cstdint>
#include <vector>

namespace strata::eval {

struct WindowPlanOptions {
  int64_t n_ctx = 512;      // tokens per window, >= 4
  int64_t stride = 0;       // window start step; 0 = n_ctx
  int64_t max_windows = 0;  // 0 = as many as the text holds
};

struct EvalWindow {
  int64_t start = 0;        // first token of the window in the text
  int64_t score_begin = 0;  // first scored logits row (window position)
  int64_t n_score = 0;      // scored rows: [score_begin, score_begin + n_score)
};

struct WindowPlan {
  int64_t n_ctx = 0;
  int64_t stride = 0;
  std::vector<EvalWindow> windows;
  int64_t n_scored() const;  // sum of n_score
};

// The windows over a text of n_tokens tokens (the last partial window is dropped). Throws
// strata::Error for n_ctx < 4, stride < 1, or a text shorter than one window.
WindowPlan plan_windows(int64_t n_tokens, const WindowPlanOptions& options);

// Streaming evaluation (attention sinks / a KV window): the whole text as one window, scoring
// every prediction from row first_scored on (the plan of a chunked run at ctx = 2 * first_scored
// skips the same warm-up in each window). Throws strata::Error when nothing would be scored.
WindowPlan plan_stream(int64_t n_tokens, int64_t first_scored);

// The tokens a window is evaluated on: text[start, start + n_ctx) with the first one replaced
// by `bos` when bos >= 0.
std::vector<int32_t> window_tokens(const std::vector<int32_t>& text, const WindowPlan& plan,
                                   const EvalWindow& w, int32_t bos);

}  // namespace strata::eval
