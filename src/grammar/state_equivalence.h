// States whose token masks are the same, found before any mask is computed.
//
// A state's mask is decided by the bytes of tokens read from it, at most the longest piece of
// the vocabulary deep. Two states of the same rule that answer alike for every byte string of
// that length (same byte ranges to alike targets, the same final flags on the way) therefore
// have the same mask: a string with maxLength 40 has about 40 counting states, but all that
// have more characters left than any token holds read the vocabulary the same way.
//
// This is Moore's partition refinement cut at `depth` rounds. States where the mask cache's
// walk hands over to the Earley recognizer (reference edges, overlapping byte ranges) are kept
// apart, each in a class of its own, so that only deterministic byte paths are compared.
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/grammar.h"

namespace strata::grammar {

// [n_states]: a class id per state; states with equal ids have equal token masks for a
// vocabulary whose pieces are at most `depth` bytes long. `work` is increased by the signature
// entries built (rounds × edges); past a fixed budget every state gets a class of its own.
std::vector<int32_t> bounded_equivalence_classes(const Grammar& g, size_t depth, int64_t& work);

}  // namespace strata::grammar
