// Cached (cos, sin) tables of the rotary embedding, one per parameter set in use.
//
// A model may rotate with several parameter sets (gemma3 and gpt-oss style models alternate
// sliding-window layers with their own base or scaling), so a few tables are kept at once instead
// of rebuilding one table at every layer.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace strata::cpu {

// Rotation angle frequencies of the n_rot / 2 dimension pairs (rad per position), and for each
// pair the weight of the original (extrapolated) angle against the scaled one: 1 outside YaRN.
struct RopeFrequencies {
  std::vector<double> freq;    // [n_rot / 2] angle of position 1 without scaling
  std::vector<double> scaled;  // [n_rot / 2] angle of position 1 after scaling
  std::vector<double> mix;     // [n_rot / 2] YaRN: weight of `freq` against `scaled`
};
RopeFrequencies rope_frequencies(const RopeParams& p);

class RopeTables {
 public:
  // (cos, sin) * attn_factor pairs for positions [0, n_positions) where n_positions > max_pos:
  // [n_positions, n_rot / 2, 2]. Valid until the next call.
  const float* get(const RopeParams& p, int32_t max_pos);

 private:
  struct Entry {
    RopeParams params;
    // The factors' values: the caller's pointer may later hold others (a model unloaded and
    // another loaded on the same backend), so entries match on content.
    std::vector<float> freq_factors;
    int64_t n_positions = 0;
    std::vector<float> table;
    uint64_t last_use = 0;
  };
  static constexpr size_t kMaxEntries = 4;
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
};

}  // namespace strata::cpu
