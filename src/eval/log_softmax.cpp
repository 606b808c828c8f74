#include "eval/log_softmax.h"

#include <cmath>

#include "core/check.h"

namespace strata::eval {
namespace {

template <typename T>
void log_softmax_impl(const T* values, int64_t n, std::vector<double>& out) {
  STRATA_CHECK(n > 0);
  double max_v = -INFINITY;
  bool has_nan = false;
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(values[i]);
    has_nan |= std::isnan(v);
    max_v = std::fmax(max_v, v);
  }
  // A model file with broken weights can make the forward pass produce NaN or inf: that is bad
  // input, not a broken invariant.
  if (has_nan || !std::isfinite(max_v)) STRATA_THROW("the model produced non-finite logits");
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(values[i]) - max_v);
  // (v - max) - log(sum) rather than v - (max + log(sum)): large logits would otherwise lose
  // the low bits of log(sum) in the addition.
  const double log_sum = std::log(sum);
  out.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    out[static_cast<size_t>(i)] = (static_cast<double>(values[i]) - max_v) - log_sum;
}

template <typename T>
int32_t argmax_impl(const T* values, int64_t n) {
  STRATA_CHECK(n > 0);
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (values[i] > values[best]) best = i;
  return static_cast<int32_t>(best);
}

}  // namespace

void log_softmax(const float* logits, int64_t n_vocab, std::vector<double>& out) {
  log_softmax_impl(logits, n_vocab, out);
}

void log_softmax(const double* values, int64_t n_vocab, std::vector<double>& out) {
  log_softmax_impl(values, n_vocab, out);
}

int32_t argmax(const float* values, int64_t n_vocab) {
  return argmax_impl(values, n_vocab);
}
int32_t argmax(const double* values, int64_t n_vocab) {
  return argmax_impl(values, n_vocab);
}

}  // namespace strata::eval
