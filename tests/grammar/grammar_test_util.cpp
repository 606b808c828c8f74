#include "grammar_test_util.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <random>

#include "common/fixtures.h"
#include "formats/gguf_reader.h"
#include "grammar/gbnf_parser.h"

namespace strata::test {

grammar::Grammar compile_gbnf(const std::string& text) {
  return grammar::compile_grammar(grammar::parse_gbnf(text));
}

namespace {
bool read_all(grammar::EarleyParser& p, std::string_view s) {
  for (char c : s)
    if (!p.push(static_cast<uint8_t>(c))) return false;
  return true;
}
}  // namespace

bool full_match(const grammar::Grammar& g, std::string_view s) {
  grammar::EarleyParser p(g);
  return read_all(p, s) && p.root_complete();
}

bool prefix_ok(const grammar::Grammar& g, std::string_view s) {
  grammar::EarleyParser p(g);
  return read_all(p, s);
}

std::shared_ptr<const grammar::TokenVocab> shared_vocab(const std::string& rel) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const grammar::TokenVocab>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& v = cache[rel];
  if (!v) {
    const auto file = GgufFile::open(shared_path(rel));
    v = grammar::TokenVocab::from_tokenizer(*Tokenizer::from_metadata(file->metadata()));
  }
  return v;
}

grammar::ConstraintSpec schema_spec(const nlohmann::ordered_json& schema) {
  grammar::ConstraintSpec s;
  s.kind = grammar::ConstraintKind::JsonSchema;
  s.schema = schema;
  return s;
}

grammar::ConstraintSpec gbnf_spec(const std::string& text) {
  grammar::ConstraintSpec s;
  s.kind = grammar::ConstraintKind::Gbnf;
  s.text = text;
  return s;
}

grammar::ConstraintSpec regex_spec(const std::string& pattern) {
  grammar::ConstraintSpec s;
  s.kind = grammar::ConstraintKind::Regex;
  s.text = pattern;
  return s;
}

Walk random_walk(const grammar::GrammarConstraintFactory& f, uint64_t seed, int explore) {
  const grammar::TokenVocab& v = f.compiled().vocab();
  const std::vector<int32_t> to_end = grammar::bytes_to_rule_end(f.compiled().grammar());
  std::vector<int32_t> byte_token(256, -1);
  for (int32_t id = 0; id < v.n_vocab(); ++id)
    if (v.piece(id).size() == 1 && !v.is_eog(id) && byte_token[static_cast<uint8_t>(v.piece(id)[0])] < 0)
      byte_token[static_cast<uint8_t>(v.piece(id)[0])] = id;
  auto m = f.make();
  auto& gm = static_cast<grammar::GrammarMatcher&>(*m);
  std::mt19937_64 rng(seed);
  Walk w;
  auto take = [&](int32_t t) {
    EXPECT_TRUE(m->accept(t)) << t;
    w.tokens.push_back(t);
    w.text += v.piece(t);
  };
  std::vector<uint8_t> allowed(static_cast<size_t>(v.n_vocab()));
  std::vector<int32_t> ids;
  for (int step = 0; step < explore; ++step) {
    if (m->is_complete() && (!m->can_continue() || rng() % 4 == 0)) break;
    std::fill(allowed.begin(), allowed.end(), 1);
    m->mask(allowed.data());
    ids.clear();
    for (int32_t id = 0; id < v.n_vocab(); ++id)
      if (allowed[static_cast<size_t>(id)] && !v.is_eog(id)) ids.push_back(id);
    if (ids.empty()) break;
    take(ids[rng() % ids.size()]);
  }
  for (int guard = 0; !m->is_complete() && guard < 100000; ++guard) {
    int32_t best = -1, best_d = INT32_MAX, ties = 0;
    for (int32_t t : byte_token) {
      if (t < 0 || !gm.token_allowed(t)) continue;
      m->accept(t);
      const int32_t d = gm.bytes_to_complete(to_end);
      m->rollback(1);
      if (d < best_d)
        best = t, best_d = d, ties = 1;
      else if (d == best_d && rng() % ++ties == 0)
        best = t;
    }
    if (best < 0) break;
    take(best);
  }
  w.complete = m->is_complete();
  return w;
}

std::string random_match(const grammar::Grammar& g, uint64_t seed, int explore) {
  const std::vector<int32_t> to_end = grammar::bytes_to_rule_end(g);
  grammar::EarleyParser p(g);
  std::mt19937_64 rng(seed);
  std::string out;
  std::vector<uint8_t> ok;
  for (int step = 0; step < explore; ++step) {
    if (p.root_complete() && (!p.can_scan() || rng() % 4 == 0)) return out;
    ok.clear();
    for (int b = 0; b < 256; ++b) {
      if (p.push(static_cast<uint8_t>(b))) {
        ok.push_back(static_cast<uint8_t>(b));
        p.truncate(p.n_sets() - 1);
      }
    }
    if (ok.empty()) break;
    const uint8_t b = ok[rng() % ok.size()];
    p.push(b);
    out += static_cast<char>(b);
  }
  for (int guard = 0; !p.root_complete() && guard < 100000; ++guard) {
    int best = -1;
    int32_t best_d = INT32_MAX;
    for (int b = 0; b < 256; ++b) {
      if (!p.push(static_cast<uint8_t>(b))) continue;
      const int32_t d = p.bytes_to_complete(to_end);
      p.truncate(p.n_sets() - 1);
      if (d < best_d) best = b, best_d = d;
    }
    if (best < 0) break;
    p.push(static_cast<uint8_t>(best));
    out += static_cast<char>(best);
  }
  EXPECT_TRUE(p.root_complete()) << out;
  return out;
}

std::string python(const std::string& script, const std::string& input) {
  const CommandResult r = run_command({"/usr/bin/python3", script}, input);
  EXPECT_EQ(r.exit_code, 0) << "python3 failed (needs Debian's python3-jsonschema):\n" << r.err;
  return r.out;
}

nlohmann::json validate_with_jsonschema(const nlohmann::json& cases) {
  const std::string out = python(source_dir() + "/tests/grammar/validate_instances.py", cases.dump());
  return out.empty() ? nlohmann::json::array() : nlohmann::json::parse(out);
}

}  // namespace strata::test
