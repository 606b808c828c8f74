// Offline use of the engine, without HTTP (as vLLM's LLM class uses its engine): the CLI's run,
// bench, perplexity, kld and logits, and the tests, drive every forward pass through these.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace strata::offline {

struct Output {
  std::vector<int32_t> tokens;  // generated (choice 0)
  std::string text;
  FinishReason finish = FinishReason::None;
  Usage usage;
  std::string error;
};

// Runs one request on the calling thread until it is done (the engine must not be started).
// on_event, if set, sees every event as it happens (streaming). Throws strata::Error when the
// request is refused.
Output generate(Engine& engine, RequestParams params, const EventCallback& on_event = {});

// Rows of prompt logits as the engine delivers them: [n_rows, n_vocab] for prompt rows
// [first_row, first_row + n_rows), in order; the pointer is valid only during the call.
using RowsCallback = std::function<void(int64_t first_row, int64_t n_rows, const float* logits)>;

// Evaluates `tokens` as one prompt and hands out the logits of rows [from, tokens.size()).
void score(Engine& engine, const std::vector<int32_t>& tokens, int64_t from, const RowsCallback& on_rows);

// An engine for one stream of up to n_ctx tokens (a KV pool of exactly that), prefix caching off.
EngineConfig single_stream_config(int64_t n_ctx, int32_t max_batched_tokens = 512);

// The logits of every row of `tokens`: [tokens.size(), n_vocab].
std::vector<float> all_logits(Model& model, const std::vector<int32_t>& tokens,
                              const KvCacheType& kv_type = {});

}  // namespace strata::offline
