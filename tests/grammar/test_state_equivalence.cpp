// States that share a token mask (state_equivalence.h): every shared entry equals the entry
// computed for that state on its own, and counting states do share.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "grammar/state_equivalence.h"
#include "grammar/token_mask_cache.h"
#include "grammar_test_util.h"

namespace strata::test {
namespace {

using grammar::ConstraintSpec;
using grammar::TokenMaskCache;

ConstraintSpec suite_schema(const std::string& name) {
  std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/tests/grammar/data/schemas.json");
  std::stringstream ss;
  ss << in.rdbuf();
  for (const auto& entry : nlohmann::ordered_json::parse(ss.str()))
    if (entry["name"] == name) return schema_spec(entry["schema"]);
  ADD_FAILURE() << "no schema " << name;
  return {};
}

std::set<int32_t> accepted_of(const TokenMaskCache& c, const TokenMaskCache::Entry& e, int32_t n_vocab) {
  std::set<int32_t> out;
  if (e.bitset >= 0) {
    const uint64_t* bits = c.bitset(e);
    for (int32_t t = 0; t < n_vocab; ++t)
      if (bits[t >> 6] >> (t & 63) & 1) out.insert(t);
  } else {
    for (int32_t t : c.accepted(e)) out.insert(t);
  }
  return out;
}

// The shared cache of a compiled constraint against one computed state by state.
int32_t expect_sharing_exact(const ConstraintSpec& spec, const std::string& vocab_path) {
  const auto vocab = shared_vocab(vocab_path);
  const auto f = grammar::compile_constraint(spec, vocab);
  const grammar::Grammar& g = f->compiled().grammar();
  const TokenMaskCache& shared = f->compiled().masks();
  const TokenMaskCache alone(g, *vocab, /*share_equivalent=*/false);
  EXPECT_GE(shared.n_computed(), 1);
  EXPECT_LE(shared.n_computed(), alone.n_computed());
  for (int32_t s : g.live_states()) {
    if (g.byte_edges(s).empty()) continue;
    const TokenMaskCache::Entry& a = shared.entry(s);
    const TokenMaskCache::Entry& b = alone.entry(s);
    EXPECT_EQ(accepted_of(shared, a, vocab->n_vocab()), accepted_of(alone, b, vocab->n_vocab()))
        << "state " << s;
    const auto ua = shared.uncertain(a), ub = alone.uncertain(b);
    EXPECT_EQ(std::vector<int32_t>(ua.begin(), ua.end()), std::vector<int32_t>(ub.begin(), ub.end()))
        << "state " << s;
  }
  return alone.n_computed() - shared.n_computed();
}

TEST(StateEquivalence, SharedMasksEqualMasksComputedAlone) {
  for (const char* vocab : {"vocab/ggml-vocab-llama-spm.gguf", "models/stories260K/stories260K.gguf"}) {
    int32_t saved = 0;
    for (const char* name : {"person", "tool_arguments", "invoice", "event_log", "nested"})
      saved += expect_sharing_exact(suite_schema(name), vocab);
    ConstraintSpec object;
    object.kind = grammar::ConstraintKind::JsonObject;
    saved += expect_sharing_exact(object, vocab);
    saved += expect_sharing_exact(regex_spec("[a-z]{0,40}(, [0-9]{1,30})?"), vocab);
    saved +=
        expect_sharing_exact(gbnf_spec("root ::= (\"<\" [a-c]{2,50} \">\" | [x-z]+ \"!\"){1,3}\n"), vocab);
    EXPECT_GT(saved, 0) << vocab;
  }
}

// [a-z]{0,N}: after k letters, N - k may follow. Every state with more letters left than the
// longest piece has reads the vocabulary the same way; the others differ from each other.
TEST(StateEquivalence, CountingStatesBeyondTheLongestPieceShareOneMask) {
  const auto vocab = shared_vocab("models/stories260K/stories260K.gguf");
  const auto longest = static_cast<int32_t>(vocab->max_piece_bytes());
  const int32_t n = longest + 20;
  const auto f = grammar::compile_constraint(regex_spec("[a-z]{0," + std::to_string(n) + "}"), vocab);
  const grammar::Grammar& g = f->compiled().grammar();
  int64_t work = 0;
  const std::vector<int32_t> cls = grammar::bounded_equivalence_classes(g, vocab->max_piece_bytes(), work);
  EXPECT_GT(work, 0);
  std::set<int32_t> classes;
  int32_t reading = 0;
  for (int32_t s : g.live_states())
    if (!g.byte_edges(s).empty()) ++reading, classes.insert(cls[static_cast<size_t>(s)]);
  EXPECT_EQ(reading, n);  // one state per count of letters read, 0 .. n - 1
  // Letters left 1 .. longest - 1 are told apart (a token that long fits or not), all from
  // `longest` on are one class.
  EXPECT_EQ(static_cast<int32_t>(classes.size()), longest);
  EXPECT_EQ(f->compiled().masks().n_computed(), longest);
}

}  // namespace
}  // namespace strata::test
