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

}  // namespace strata
