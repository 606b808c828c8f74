// Where the base distribution of `strata kld` comes from: a live base model, or a base run
// saved earlier with --save-base. Both hand out the scored rows in window order.
#pragma once

#include <cstdint>
#include <vector>

#include "eval/base_logits_file.h"
#include "eval/window_runner.h"

namespace strata::eval {

class BaseSource {
 public:
  virtual ~BaseSource() = default;
  // Starts window `w` of the plan; tokens: [n_ctx] as window_tokens() returns them.
  virtual void begin_window(const std::vector<int32_t>& tokens, const EvalWindow& w) = 0;
  // The next scored row of the current window; `target` is the text token it predicts.
  virtual void next_row(int32_t target, BaseRow& row) = 0;
};

// Runs the base model alongside the model under test.
class ModelBaseSource : public BaseSource {
 public:
  ModelBaseSource(Model& base, int64_t n_ctx, const KvCacheType& kv_type = {})
      : runner_(base, n_ctx, kv_type) {}
  void begin_window(const std::vector<int32_t>& tokens, const EvalWindow& w) override;
  void next_row(int32_t target, BaseRow& row) override;

 private:
  WindowRunner runner_;
  LogitsChunk chunk_;
  int64_t row_in_chunk_ = 0;
};

// Replays a saved base run; rows must be requested in the order they were written.
class FileBaseSource : public BaseSource {
 public:
  explicit FileBaseSource(const BaseLogitsReader& reader) : reader_(reader) {}
  void begin_window(const std::vector<int32_t>& tokens, const EvalWindow& w) override {}
  void next_row(int32_t target, BaseRow& row) override;

 private:
  const BaseLogitsReader& reader_;
  int64_t next_ = 0;
};

}  // namespace strata::eval
