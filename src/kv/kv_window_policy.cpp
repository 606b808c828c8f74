#include "kv/kv_window_policy.h"

#include "core/check.h"

namespace strata {

void KvWindowPolicy::validate(int32_t block_size) const {
  if (sinks < 0) STRATA_THROW("--kv-sinks must be at least 0, got ", sinks);
  if (window < 0) STRATA_THROW("--kv-window must be at least 0, got ", window);
  if (sinks > 0 && window == 0)
    STRATA_THROW("--kv-sinks ", sinks, " needs --kv-window (the tokens kept after the sinks)");
  if (window > 0 && window < block_size)
    STRATA_THROW("--kv-window ", window, " is smaller than one KV block (", block_size,
                 " tokens): blocks are the unit the window frees");
  if (window > (1 << 24) || sinks > (1 << 24))
    STRATA_THROW("--kv-window and --kv-sinks must be at most 2^24");
}

LayerWindow layer_window(const KvWindowPolicy& policy, int64_t model_window) {
  if (!policy.enabled()) return {static_cast<int32_t>(model_window), 0};
  if (model_window > 0 && model_window < policy.window) return {static_cast<int32_t>(model_window), 0};
  return {policy.window, policy.sinks};
}

}  // namespace strata
