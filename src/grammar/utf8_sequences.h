// Code point sets as byte sequences: each scalar value range splits into runs whose UTF-8
// encodings are products of byte ranges (e.g. U+0800..U+FFFF minus surrogates ->
// [E0][A0-BF][80-BF] | [E1-EC][80-BF][80-BF] | [ED][80-9F][80-BF] | [EE-EF][80-BF][80-BF]).
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/expr.h"

namespace strata::grammar {

struct ByteRange {
  uint8_t lo, hi;
};
using ByteSequence = std::vector<ByteRange>;

// The byte sequences matching exactly one member of `set`. json_escape: members are written as
// inside a JSON string: '"' -> \" , '\' -> \\ , U+0000..U+001F -> \b \t \n \f \r or \u00XX.
std::vector<ByteSequence> codepoint_byte_sequences(const CodepointSet& set, bool json_escape);

}  // namespace strata::grammar
