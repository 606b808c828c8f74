// Runs one model over evaluation windows and hands out the logits of the scored rows in chunks,
// so memory stays at one chunk of rows whatever the window size and vocabulary.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "engine/token_budget.h"
#include "eval/eval_windows.h"
#include "kv/kv_evict_policy.h"
#include "kv/kv_window_policy.h"
#include "model/model.h"

namespace strata::eval {

struct LogitsChunk {
  int64_t first_row = 0;          // window position of the first row
  int64_t n_rows = 0;             // 0: the window is done
  const float* logits = nullptr;  // [n_rows, n_vocab]
};

// A window is one engine request: the window's tokens up to its last scored row as the prompt,
// prompt logits from the first scored row, nothing generated.
class WindowRunner {
 public:
  // Rows handed out per chunk: one model pass of the default token budget.
  static constexpr int64_t kChunkRows = kDefaultMaxBatchedTokens;

  // kv_type: the KV cache element types (F16 by default, as llama.cpp's); kv_window: attention
  // sinks + window (off by default; on, the KV pool holds only what the window keeps); kv_evict:
  // score-based eviction (off by default; on, each window's context before its first scored row
  // is the evicted prompt, and the scored rows run over the compacted cache).
  WindowRunner(Model& model, int64_t n_ctx, const KvCacheType& kv_type = {},
               const KvWindowPolicy& kv_window = {}, const KvEvictPolicy& kv_evict = {});

  // Starts a window. tokens: [n_ctx] as window_tokens() returns them.
  void begin(const std::vector<int32_t>& tokens, const EvalWindow& w);
  // Evaluates the next run of scored rows; n_rows == 0 once the window is finished. The
  // pointer stays valid until the next call.
  LogitsChunk next_chunk();

  int64_t n_vocab() const { return n_vocab_; }

 private:
  Engine engine_;
  int64_t n_ctx_;
  int64_t n_vocab_;
  int64_t next_row_ = 0;
  int64_t end_row_ = 0;
  bool done_ = true;
  std::string error_;
  LogitsChunk pending_;  // delivered by the engine during the last step, not yet handed out
};

}  // namespace strata::eval
