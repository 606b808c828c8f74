#include "sampling/rng.h"

namespace strata {
namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

inline uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

}  // namespace

void Rng::reseed(uint64_t seed) {
  uint64_t x = seed;
  for (auto& s : s_) s = splitmix64(x);
}

uint64_t Rng::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() {
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

double hash_uniform(uint64_t seed, uint64_t counter, uint64_t stream) {
  // Three rounds of splitmix64 over the mixed inputs: each input bit reaches every output bit.
  uint64_t x = seed;
  uint64_t h = splitmix64(x);
  x = h ^ (counter * 0xd1b54a32d192ed03ULL);
  h = splitmix64(x);
  x = h ^ (stream * 0x8cb92ba72f3d8dd7ULL);
  h = splitmix64(x);
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

}  // namespace strata
