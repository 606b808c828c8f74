// Shared by the grammar fuzz targets: a small vocabulary (every byte, some multi-byte pieces,
// an end token) and a differential walk: at each step the mask must equal feeding every
// token's bytes to the recognizer, and rollback must restore the mask.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/check.h"
#include "grammar/grammar_matcher.h"

namespace strata::fuzz {

inline std::shared_ptr<const grammar::TokenVocab> small_vocab() {
  static const auto vocab = [] {
    std::vector<std::string> pieces;
    for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, static_cast<char>(b)));
    for (const char* p : {"{\"", "\":", "\",",      "ab",           "abc", "true", "false", "null",
                          "12",  "0.",  "\xc3\xa9", "\xe6\x97\xa5", " ",   "  ",   "\n  ",  "\"}",
                          "[1",  "],",  "\\n",      "\\\"",         "x{",  "a b",  "-1",    "ee"})
      pieces.push_back(p);
    pieces.push_back("");  // a control token: never text
    pieces.push_back("");  // the end token
    const auto eog = static_cast<int32_t>(pieces.size() - 1);
    return std::make_shared<const grammar::TokenVocab>(std::move(pieces), std::vector<int32_t>{eog});
  }();
  return vocab;
}

// Walks `steps` tokens chosen by `choice` bytes, checking masks against the brute force.
inline void differential_walk(const grammar::Grammar& g, const uint8_t* choice, size_t n_choice) {
  const auto vocab = small_vocab();
  auto compiled = std::make_shared<const grammar::CompiledConstraint>(g, vocab);
  grammar::GrammarMatcher m(compiled);
  std::vector<uint8_t> allowed(static_cast<size_t>(vocab->n_vocab()));
  std::vector<int32_t> ids;
  for (size_t step = 0; step < 12; ++step) {
    std::fill(allowed.begin(), allowed.end(), 1);
    m.mask(allowed.data());
    ids.clear();
    for (int32_t t = 0; t < vocab->n_vocab(); ++t) {
      STRATA_CHECK(allowed[static_cast<size_t>(t)] == m.token_allowed(t),
                   "mask differs from brute force at token ", t);
      if (allowed[static_cast<size_t>(t)]) ids.push_back(t);
    }
    if (ids.empty()) break;
    const uint8_t c = n_choice ? choice[step % n_choice] : 0;
    STRATA_CHECK(m.accept(ids[c % ids.size()]));
    if (c & 0x80) {  // undo and check the mask is what it was
      std::vector<uint8_t> before = allowed;
      m.rollback(1);
      std::fill(allowed.begin(), allowed.end(), 1);
      m.mask(allowed.data());
      STRATA_CHECK(allowed == before, "rollback changed the mask");
      STRATA_CHECK(m.accept(ids[c % ids.size()]));
    }
  }
}

}  // namespace strata::fuzz
