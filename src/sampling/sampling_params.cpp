#include "sampling/sampling_params.h"

#include <cmath>

#include "core/check.h"

namespace strata {

void SamplingParams::validate(int32_t n_vocab) const {
  auto finite = [](float v) { return std::isfinite(v); };
  if (!finite(temperature) || temperature < 0.0f || temperature > 100.0f)
    STRATA_THROW("temperature must be in [0, 100], got ", temperature);
  if (top_k < 0) STRATA_THROW("top_k must be >= 0, got ", top_k);
  if (!finite(top_p) || top_p <= 0.0f || top_p > 1.0f) STRATA_THROW("top_p must be in (0, 1], got ", top_p);
  if (!finite(min_p) || min_p < 0.0f || min_p > 1.0f) STRATA_THROW("min_p must be in [0, 1], got ", min_p);
  if (!finite(repetition_penalty) || repetition_penalty <= 0.0f || repetition_penalty > 10.0f)
    STRATA_THROW("repetition_penalty must be in (0, 10], got ", repetition_penalty);
  if (!finite(frequency_penalty) || frequency_penalty < -2.0f || frequency_penalty > 2.0f)
    STRATA_THROW("frequency_penalty must be in [-2, 2], got ", frequency_penalty);
  if (!finite(presence_penalty) || presence_penalty < -2.0f || presence_penalty > 2.0f)
    STRATA_THROW("presence_penalty must be in [-2, 2], got ", presence_penalty);
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0 || id >= n_vocab) STRATA_THROW("logit_bias token id ", id, " is outside the vocabulary");
    if (!finite(bias) || bias < -100.0f || bias > 100.0f)
      STRATA_THROW("logit_bias value must be in [-100, 100], got ", bias);
  }
}

}  // namespace strata
