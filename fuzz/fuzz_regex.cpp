// libFuzzer target for the regex compiler (guided_regex, schema patterns): the input is a
// pattern. It compiles or fails with a GrammarError; a compiled one is walked with masks
// checked against the brute force, and the pattern text itself is matched against it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "grammar/earley.h"
#include "grammar/limits.h"
#include "grammar/regex_parser.h"
#include "grammar_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 2048) return 0;
  const std::string pattern(reinterpret_cast<const char*>(data), size);
  try {
    const strata::grammar::Grammar g =
        strata::grammar::compile_grammar(strata::grammar::regex_grammar(pattern));
    strata::grammar::EarleyParser p(g);
    for (char c : pattern)
      if (!p.push(static_cast<uint8_t>(c))) break;
    strata::fuzz::differential_walk(g, data, size);
  } catch (const strata::grammar::GrammarError&) {
  }
  return 0;
}
