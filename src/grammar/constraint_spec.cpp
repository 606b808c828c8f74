#include "grammar/constraint_spec.h"

#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "grammar/json_values.h"
#include "grammar/limits.h"
#include "grammar/regex_parser.h"
#include "grammar/tool_call_grammar.h"

namespace strata::grammar {

std::string ConstraintSpec::cache_key() const {
  switch (kind) {
    case ConstraintKind::Gbnf:
      return "gbnf:" + text;
    case ConstraintKind::Regex:
      return "regex:" + text;
    case ConstraintKind::JsonObject:
      return "json_object";
    case ConstraintKind::JsonSchema:
      return "schema:" + schema.dump();
    case ConstraintKind::ToolCalls:
      return "tools:" + schema.dump();
    case ConstraintKind::Choice: {
      std::string key = "choice";
      for (const std::string& c : choices) key += ":" + std::to_string(c.size()) + ":" + c;
      return key;
    }
  }
  return {};
}

GrammarAst spec_grammar(const ConstraintSpec& spec) {
  switch (spec.kind) {
    case ConstraintKind::Gbnf:
      return parse_gbnf(spec.text);
    case ConstraintKind::Regex:
      return regex_grammar(spec.text);
    case ConstraintKind::JsonObject:
      return json_object_grammar();
    case ConstraintKind::JsonSchema:
      return json_schema_grammar(spec.schema);
    case ConstraintKind::ToolCalls:
      return tool_call_grammar(spec.schema);
    case ConstraintKind::Choice: {
      if (spec.choices.empty()) STRATA_GRAMMAR_THROW("the list of choices is empty");
      if (spec.choices.size() > kMaxChoices) STRATA_GRAMMAR_THROW("more than ", kMaxChoices, " choices");
      size_t bytes = 0;
      GrammarAst ast;
      std::vector<ExprId> alts;
      for (const std::string& c : spec.choices) {
        bytes += c.size();
        if (bytes > kMaxGrammarBytes)
          STRATA_GRAMMAR_THROW("the choices are longer than ", kMaxGrammarBytes, " bytes");
        alts.push_back(ast.literal(c));
      }
      ast.root = ast.add_rule("root", ast.alt(std::move(alts)));
      return ast;
    }
  }
  STRATA_GRAMMAR_THROW("unknown constraint kind");
}

std::shared_ptr<const GrammarConstraintFactory> compile_constraint(const ConstraintSpec& spec,
                                                                   std::shared_ptr<const TokenVocab> vocab) {
  auto compiled =
      std::make_shared<const CompiledConstraint>(compile_grammar(spec_grammar(spec)), std::move(vocab));
  return std::make_shared<const GrammarConstraintFactory>(std::move(compiled));
}

std::shared_ptr<const GrammarConstraintFactory> ConstraintCache::get(const ConstraintSpec& spec) {
  const std::string key = spec.cache_key();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  auto factory = compile_constraint(spec, vocab_);
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) return it->second->second;
  lru_.emplace_front(key, factory);
  index_[key] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return factory;
}

}  // namespace strata::grammar
