// KL divergence of a model from a base model (base ‖ model) over a text, with the perplexity of
// both: how quantized weights or a quantized KV cache are judged.
#pragma once

#include <cstdint>
#include <vector>

#include "eval/base_source.h"
#include "eval/perplexity.h"
#include "eval/running_stats.h"

namespace strata::eval {

struct KldResult {
  int64_t n_tokens = 0;  // scored positions
  int64_t n_windows = 0;
  int64_t n_ctx = 0;
  int64_t stride = 0;
  // KL(base ‖ model) = sum_i p_base(i) (log p_base(i) - log p_model(i)) per position, in nats.
  double kld_mean = 0.0, kld_stderr = 0.0;
  double kld_min = 0.0, kld_median = 0.0, kld_p90 = 0.0, kld_p95 = 0.0, kld_p99 = 0.0, kld_max = 0.0;
  // % of positions where the model's argmax is the base's argmax, and its standard error.
  double top1_agreement = 0.0, top1_agreement_stderr = 0.0;
  double ppl_base = 0.0, ppl_base_stderr = 0.0;
  double ppl_model = 0.0, ppl_model_stderr = 0.0;
  // PPL(model) - PPL(base) and ln(PPL(model) / PPL(base)); the errors use the paired
  // covariance of the two NLL series (they are strongly correlated, so much smaller than the
  // errors of the two perplexities combined independently).
  double delta_ppl = 0.0, delta_ppl_stderr = 0.0;
  double ln_ppl_ratio = 0.0, ln_ppl_ratio_stderr = 0.0;
};

// Accumulates per-position statistics; keeps one double per position for the percentiles.
class KldAccumulator {
 public:
  // base: the base row at this position; model_logits: [n_vocab] of the model there;
  // target: the text token that follows.
  void add(const BaseRow& base, const float* model_logits, int64_t n_vocab, int32_t target);
  KldResult result() const;
  const RunningStats& kld_stats() const { return kld_stats_; }
  const RunningStats& model_nll_stats() const { return nll_.x(); }

 private:
  std::vector<double> kld_;         // [positions]
  std::vector<double> model_logp_;  // [n_vocab] scratch
  PairedStats nll_;                 // (model NLL, base NLL)
  RunningStats kld_stats_;
  int64_t n_agree_ = 0;
};

// Evaluates every window of `plan`: the base rows come from `base`, the model's from `model`, a
// runner over the model under test made with plan.n_ctx. `model` may be null: only the base run
// is saved then, and the result holds only ppl_base. When `save` is given, every base row is
// written to it (the caller finishes the writer).
KldResult evaluate_kld(BaseSource& base, WindowRunner* model, const std::vector<int32_t>& text,
                       const WindowPlan& plan, int32_t bos, BaseLogitsWriter* save,
                       const ProgressFn& progress = {});

}  // namespace strata::eval
