// A small, fast, portable PRNG (xoshiro256**): the same seed gives the same stream on every
// platform and standard library (std:: distributions do not guarantee that).
#pragma once

#include <cstdint>

namespace strata {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }
  void reseed(uint64_t seed);
  uint64_t next_u64();
  // Uniform in [0, 1) with 53 random bits.
  double uniform();

 private:
  uint64_t s_[4];
};

// A uniform number in [0, 1) that is a fixed function of (seed, counter, stream): counter-based
// randomness, so a draw does not depend on how many draws came before it.
double hash_uniform(uint64_t seed, uint64_t counter, uint64_t stream);

}  // namespace strata
