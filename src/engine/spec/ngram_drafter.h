// Prompt-lookup drafting (n-gram): the last n tokens of a sequence (n from n_max down to n_min)
// are looked up among its own earlier tokens, prompt and output; the tokens that followed their
// most recent earlier occurrence are proposed. Free to compute, and very effective when the
// answer repeats spans of the prompt (editing, extraction, "repeat the following text").
#pragma once

#include <unordered_map>

#include "engine/spec/drafter.h"

namespace strata {

class NgramDrafter final : public Drafter {
 public:
  NgramDrafter(int32_t n_min = 1, int32_t n_max = 4);

  const DraftMethodSpec& method() const override { return method_; }
  bool uses_kv() const override { return false; }
  void draft(std::span<DraftSlot* const> slots) override;
  void release(uint64_t seq_id) override { index_.erase(seq_id); }

 private:
  // Per sequence: for each n, the end position of the latest occurrence of every n-gram that
  // has a successor, keyed by the n-gram's hash; grows with the sequence.
  struct Index {
    std::vector<std::unordered_map<uint64_t, int64_t>> last_end;  // [n_max - n_min + 1]
    int64_t n_indexed = 0;  // n-grams ending before this position are in the index
  };
  void extend(Index& ix, const std::vector<int32_t>& tokens) const;

  DraftMethodSpec method_{DraftMethod::Ngram, ""};
  int32_t n_min_, n_max_;
  std::unordered_map<uint64_t, Index> index_;
};

// Hash of tokens[begin, begin + n).
uint64_t ngram_hash(const int32_t* tokens, int32_t n);

}  // namespace strata
