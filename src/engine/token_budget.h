// The token budget of one model pass, the one knob that bounds a pass's size: the scheduler packs
// at most this many tokens into an engine step (`strata serve --max-batched-tokens`), so offline
// use (run, perplexity, kld, bench) feeds longer inputs in chunks of it. The model itself runs whatever batch
// it is given, its scratch growing to fit.
#pragma once

#include <cstdint>

namespace strata {

inline constexpr int32_t kDefaultMaxBatchedTokens = 512;

}  // namespace strata
