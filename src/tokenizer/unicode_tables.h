// Unicode data the tokenizers need, generated from the Unicode Character Database by
// tools/gen_unicode_tables.py into unicode_tables.cpp (the build does not run the script).
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::unicode {

// General categories collapsed to their major class (\p{L}, \p{N}, ...). Unassigned code points
// (Cn) are not listed in the tables; "Other" covers Cc, Cf, Cs and Co.
enum class UnicodeClass : uint8_t {
  Unassigned = 0,
  Letter = 1,
  Number = 2,
  Punctuation = 3,
  Symbol = 4,
  Mark = 5,
  Separator = 6,
  Other = 7,
};

struct ClassRange {
  uint32_t first;
  uint32_t last;  // inclusive
  UnicodeClass cls;
};

struct CodepointRange {
  uint32_t first;
  uint32_t last;  // inclusive
};

extern const char* const kUnicodeVersion;
// Sorted, non-overlapping.
extern const ClassRange kClassRanges[];
extern const size_t kClassRangeCount;
// The White_Space property, sorted.
extern const CodepointRange kWhiteSpaceRanges[];
extern const size_t kWhiteSpaceRangeCount;

}  // namespace strata::unicode
