// Embedding requests: how the final hidden states of a prompt are pooled into one vector, and
// how that vector is normalized (llama.cpp's --pooling and --embd-normalize).
//
// The engine runs an embedding request like any prompt (batched, chunked prefill) and returns the
// pooled, unnormalized vector; the server and the CLI normalize it. Logits are linear in the
// final hidden state (logits_t = W_out . h_t), so W_out applied to a pooled vector is the same
// pooling of the logits, which is what the tests check against llama.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

class Metadata;

// Which positions' final hidden states make the embedding. None: not an embedding request.
enum class Pooling { None, Mean, Cls, Last };

const char* pooling_name(Pooling p);
// "mean" | "cls" | "last"; throws strata::Error for anything else.
Pooling parse_pooling(std::string_view name);
// The model's own choice, `<arch>.pooling_type` (llama.cpp's enum: 1 mean, 2 cls, 3 last);
// nullopt when absent or a type without one vector per input (0 none, 4 rank).
std::optional<Pooling> model_pooling(const Metadata& metadata, const std::string& arch);

// What an embedding request pools with: `requested` when not None, else the model's own, else
// mean (decoder models carry no pooling_type; llama.cpp falls back the same way).
Pooling resolve_pooling(Pooling requested, const Metadata& metadata, const std::string& arch);

// Accumulates the hidden rows of one sequence's prompt positions, in any chunking. Positions
// already added (a sequence recomputed after preemption) are skipped, so each counts once.
class EmbeddingPool {
 public:
  EmbeddingPool(Pooling pooling, int64_t n_embd, int64_t n_prompt);
  // Whether position `pos` contributes (the rows the forward pass must return).
  bool wants(int64_t pos) const;
  // Adds the row of position `pos` (one of wants()); positions arrive in increasing order, and
  // one already added is ignored.
  void add(int64_t pos, const float* row);  // row: [n_embd]
  // The pooled vector, unnormalized: [n_embd]. Every wanted position must have been added.
  std::vector<float> result() const;

 private:
  Pooling pooling_;
  int64_t n_prompt_;
  int64_t next_pos_ = 0;     // positions before this have been added
  std::vector<double> sum_;  // [n_embd] (double: a mean over thousands of rows)
  int64_t n_rows_ = 0;
};

// Normalizes in place as llama.cpp's --embd-normalize does: -1 none, 0 max absolute value
// scaled to 32760 (int16 range), 1 taxicab, 2 Euclidean (the default), p > 2 the p-norm. A zero
// vector stays zero. Throws strata::Error for p < -1.
void normalize_embedding(std::vector<float>& v, int32_t norm);

}  // namespace strata
