#include "eval/perplexity.h"

#include "core/check.h"
#include "eval/log_softmax.h"
#include "eval/running_stats.h"
#include "eval/window_runner.h"

namespace strata::eval {

std::vector<int32_t> tokenize_eval_text(const Tokenizer& tok, std::string_view text) {
  if (text.empty()) STRATA_THROW("the evaluation text is empty");
  std::vector<int32_t> ids = tok.encode(text, /*add_special=*/true, /*parse_special=*/false);
  return ids;
}

int32_t window_bos(const Tokenizer& tok) {
  return tok.add_bos() && tok.bos() >= 0 ? tok.bos() : -1;
}

PerplexityResult evaluate_perplexity(Model& model, const std::vector<int32_t>& text, const WindowPlan& plan,
                                     const KvCacheType& kv_type, const ProgressFn& progress,
                                     const KvWindowPolicy& kv_window, const KvEvictPolicy& kv_evict) {
  const int32_t bos = window_bos(model.tokenizer());
  WindowRunner runner(model, plan.n_ctx, kv_type, kv_window, kv_evict);
  const int64_t n_vocab = runner.n_vocab();
  RunningStats nll;
  int64_t n_top1 = 0;
  std::vector<double> logp;
  EvalProgress p;
  p.n_windows = static_cast<int64_t>(plan.windows.size());
  for (const EvalWindow& w : plan.windows) {
    runner.begin(window_tokens(text, plan, w, bos), w);
    for (LogitsChunk c = runner.next_chunk(); c.n_rows > 0; c = runner.next_chunk()) {
      for (int64_t r = 0; r < c.n_rows; ++r) {
        const float* row = c.logits + r * n_vocab;  // [n_vocab]
        // Row j predicts the text token right after window position j.
        const int32_t target = text[static_cast<size_t>(w.start + c.first_row + r + 1)];
        log_softmax(row, n_vocab, logp);
        nll.add(-logp[static_cast<size_t>(target)]);
        n_top1 += argmax(row, n_vocab) == target ? 1 : 0;
      }
    }
    ++p.windows_done;
    p.tokens_scored = nll.count();
    p.running_ppl = perplexity_from_nll(nll).ppl;
    if (progress) progress(p);
  }
  PerplexityResult r;
  const PerplexityEstimate e = perplexity_from_nll(nll);
  r.ppl = e.ppl;
  r.ppl_stderr = e.ppl_stderr;
  r.nll_mean = nll.mean();
  r.nll_stderr = nll.stderr_of_mean();
  r.n_tokens = nll.count();
  r.top1_accuracy =
      r.n_tokens > 0 ? 100.0 * static_cast<double>(n_top1) / static_cast<double>(r.n_tokens) : 0.0;
  r.n_windows = p.n_windows;
  r.n_text_tokens = static_cast<int64_t>(text.size());
  r.n_ctx = plan.n_ctx;
  r.stride = plan.stride;
  return r;
}

}  // namespace strata::eval
