#include "eval/eval_windows.h"

#include <algorithm>

#include "core/check.h"

namespace strata::eval {

int64_t WindowPlan::n_scored() const {
  int64_t n = 0;
  for (const EvalWindow& w : windows) n += w.n_score;
  return n;
}

WindowPlan plan_windows(int64_t n_tokens, const WindowPlanOptions& o) {
  if (o.n_ctx < 4) STRATA_THROW("context size ", o.n_ctx, " is too small (at least 4 tokens)");
  const int64_t stride = o.stride == 0 ? o.n_ctx : o.stride;
  if (stride < 1) STRATA_THROW("stride must be at least 1, got ", o.stride);
  if (o.max_windows < 0) STRATA_THROW("window count must not be negative, got ", o.max_windows);
  if (n_tokens < o.n_ctx)
    STRATA_THROW("the text has ", n_tokens, " tokens, fewer than one window of ", o.n_ctx,
                 " (use a longer text or a smaller --ctx)");
  WindowPlan plan;
  plan.n_ctx = o.n_ctx;
  plan.stride = stride;
  int64_t n_windows = (n_tokens - o.n_ctx) / stride + 1;
  if (o.max_windows > 0) n_windows = std::min(n_windows, o.max_windows);
  const int64_t n_score = std::min(o.n_ctx - 1 - o.n_ctx / 2, stride);
  plan.windows.reserve(static_cast<size_t>(n_windows));
  for (int64_t w = 0; w < n_windows; ++w)
    plan.windows.push_back(EvalWindow{w * stride, o.n_ctx - 1 - n_score, n_score});
  return plan;
}

WindowPlan plan_stream(int64_t n_tokens, int64_t first_scored) {
  if (first_scored < 0) STRATA_THROW("the first scored row must not be negative, got ", first_scored);
  if (n_tokens - 1 <= first_scored)
    STRATA_THROW("the text has ", n_tokens, " tokens: nothing to score after the first ", first_scored);
  WindowPlan plan;
  plan.n_ctx = n_tokens;
  plan.stride = n_tokens;
  plan.windows.push_back(EvalWindow{0, first_scored, n_tokens - 1 - first_scored});
  return plan;
}

std::vector<int32_t> window_tokens(const std::vector<int32_t>& text, const WindowPlan& plan,
                                   const EvalWindow& w, int32_t bos) {
  STRATA_CHECK(w.start >= 0 && w.start + plan.n_ctx <= static_cast<int64_t>(text.size()));
  std::vector<int32_t> tokens(text.begin() + w.start, text.begin() + w.start + plan.n_ctx);
  if (bos >= 0) tokens[0] = bos;
  return tokens;
}

}  // namespace strata::eval
