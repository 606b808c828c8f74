// libFuzzer target for the GBNF parser and grammar compiler: the input is grammar text (from a
// request's `grammar` field). Parsing and compiling end in a grammar or a GrammarError, never a
// crash, hang or unbounded allocation; a grammar that compiles is walked with masks checked
// against the brute force.
#include <cstddef>
#include <cstdint>
#include <string>

#include "grammar/gbnf_parser.h"
#include "grammar/limits.h"
#include "grammar_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;  // the limits themselves are tested elsewhere; keep inputs fast
  try {
    const strata::grammar::Grammar g = strata::grammar::compile_grammar(
        strata::grammar::parse_gbnf(std::string(reinterpret_cast<const char*>(data), size)));
    strata::fuzz::differential_walk(g, data, size);
  } catch (const strata::grammar::GrammarError&) {
  }
  return 0;
}
