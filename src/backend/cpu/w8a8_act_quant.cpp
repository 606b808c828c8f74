// The scalar reference of W8A8 activation quantization (w8a8_kernels.h).
#include <algorithm>
#include <cmath>

#include "backend/cpu/w8a8_kernels.h"

namespace strata::cpu {

float w8a8_quantize_act_scalar(const float* x, int64_t n_in, int64_t kp, float static_absmax, int8_t* q,
                               int32_t* sum) {
  float amax = static_absmax;
  if (amax <= 0.0f)  // std::max(amax, NaN) keeps amax: NaNs do not set the scale
    for (int64_t k = 0; k < n_in; ++k) amax = std::max(amax, std::fabs(x[k]));
  const float d = amax / 127.0f;
  const float id = d > 0.0f ? 1.0f / d : 0.0f;
  int32_t s = 0;
  for (int64_t k = 0; k < n_in; ++k) {
    const int v = w8a8_quant_one(x[k] * id);
    q[k] = static_cast<int8_t>(v);
    s += v;
  }
  for (int64_t k = n_in; k < kp; ++k) q[k] = 0;
  *sum = s;
  return d;
}

}  // namespace strata::cpu
