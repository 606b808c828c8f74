#include "eval/kld.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "eval/log_softmax.h"

namespace strata::eval {

void KldAccumulator::add(const BaseRow& base, const float* model_logits, int64_t n_vocab, int32_t target) {
  STRATA_CHECK(static_cast<int64_t>(base.logp.size()) == n_vocab && target >= 0 && target < n_vocab);
  log_softmax(model_logits, n_vocab, model_logp_);
  double kl = 0.0;
  for (int64_t i = 0; i < n_vocab; ++i) {
    const double lb = base.logp[static_cast<size_t>(i)];
    if (lb == -INFINITY) continue;  // p = 0 contributes 0 (0 * inf would be NaN)
    kl += std::exp(lb) * (lb - model_logp_[static_cast<size_t>(i)]);
  }
  kld_.push_back(kl);
  kld_stats_.add(kl);
  nll_.add(-model_logp_[static_cast<size_t>(target)], base.nll);
  n_agree_ += argmax(model_logits, n_vocab) == base.top1 ? 1 : 0;
}

KldResult KldAccumulator::result() const {
  KldResult r;
  r.n_tokens = kld_stats_.count();
  if (r.n_tokens == 0) return r;
  r.kld_mean = kld_stats_.mean();
  r.kld_stderr = kld_stats_.stderr_of_mean();
  std::vector<double> sorted = kld_;
  std::sort(sorted.begin(), sorted.end());
  r.kld_min = sorted.front();
  r.kld_median = quantile_of_sorted(sorted, 0.5);
  r.kld_p90 = quantile_of_sorted(sorted, 0.90);
  r.kld_p95 = quantile_of_sorted(sorted, 0.95);
  r.kld_p99 = quantile_of_sorted(sorted, 0.99);
  r.kld_max = sorted.back();

  const double n = static_cast<double>(r.n_tokens);
  const double p = static_cast<double>(n_agree_) / n;
  r.top1_agreement = 100.0 * p;
  r.top1_agreement_stderr = r.n_tokens > 1 ? 100.0 * std::sqrt(p * (1.0 - p) / (n - 1.0)) : 0.0;

  const PerplexityEstimate pm = perplexity_from_nll(nll_.x()), pb = perplexity_from_nll(nll_.y());
  r.ppl_model = pm.ppl;
  r.ppl_model_stderr = pm.ppl_stderr;
  r.ppl_base = pb.ppl;
  r.ppl_base_stderr = pb.ppl_stderr;
  // Variances of the two mean NLLs and their covariance, propagated to first order.
  const double var_m = std::pow(nll_.x().stderr_of_mean(), 2), var_b = std::pow(nll_.y().stderr_of_mean(), 2);
  const double cov = nll_.covariance_of_means();
  r.ln_ppl_ratio = nll_.x().mean() - nll_.y().mean();
  r.ln_ppl_ratio_stderr = std::sqrt(std::max(0.0, var_m + var_b - 2.0 * cov));
  r.delta_ppl = pm.ppl - pb.ppl;
  r.delta_ppl_stderr = std::sqrt(
      std::max(0.0, pm.ppl * pm.ppl * var_m + pb.ppl * pb.ppl * var_b - 2.0 * pm.ppl * pb.ppl * cov));
  return r;
}

namespace {

// One window: base rows paired with the model's rows (or base rows alone).
void run_window(BaseSource& base, WindowRunner* model, const std::vector<int32_t>& text, const EvalWindow& w,
                const std::vector<int32_t>& tokens, BaseLogitsWriter* save, KldAccumulator& acc,
                RunningStats& base_nll, BaseRow& row) {
  base.begin_window(tokens, w);
  auto base_row = [&](int64_t window_pos) {
    const int32_t target = text[static_cast<size_t>(w.start + window_pos + 1)];
    base.next_row(target, row);
    base_nll.add(row.nll);
    if (save) save->write_row(row);
    return target;
  };
  if (!model) {
    for (int64_t j = w.score_begin; j < w.score_begin + w.n_score; ++j) base_row(j);
    return;
  }
  model->begin(tokens, w);
  const int64_t n_vocab = model->n_vocab();
  for (LogitsChunk c = model->next_chunk(); c.n_rows > 0; c = model->next_chunk()) {
    for (int64_t r = 0; r < c.n_rows; ++r) {
      const int32_t target = base_row(c.first_row + r);
      acc.add(row, c.logits + r * n_vocab, n_vocab, target);
    }
  }
}

}  // namespace

KldResult evaluate_kld(BaseSource& base, WindowRunner* model, const std::vector<int32_t>& text,
                       const WindowPlan& plan, int32_t bos, BaseLogitsWriter* save,
                       const ProgressFn& progress) {
  KldAccumulator acc;
  RunningStats base_nll;
  BaseRow row;
  EvalProgress p;
  p.n_windows = static_cast<int64_t>(plan.windows.size());
  for (const EvalWindow& w : plan.windows) {
    run_window(base, model, text, w, window_tokens(text, plan, w, bos), save, acc, base_nll, row);
    ++p.windows_done;
    p.tokens_scored = base_nll.count();
    p.running_ppl = perplexity_from_nll(model ? acc.model_nll_stats() : base_nll).ppl;
    if (model) p.running_kld = acc.kld_stats().mean();
    if (progress) progress(p);
  }
  KldResult r = acc.result();
  if (!model) {
    const PerplexityEstimate e = perplexity_from_nll(base_nll);
    r.n_tokens = base_nll.count();
    r.ppl_base = e.ppl;
    r.ppl_base_stderr = e.ppl_stderr;
  }
  r.n_windows = p.n_windows;
  r.n_ctx = plan.n_ctx;
  r.stride = plan.stride;
  return r;
}

}  // namespace strata::eval
