#include "grammar/expr.h"

#include <algorithm>
#include <cstdio>

#include "grammar/limits.h"

namespace strata::grammar {
namespace {

constexpr uint32_t kSurrogateLo = 0xD800, kSurrogateHi = 0xDFFF;

}  // namespace

void CodepointSet::add(uint32_t lo, uint32_t hi) {
  hi = std::min(hi, kMaxCodepoint);
  if (lo > hi) return;
  // Surrogates are cut out of every range.
  if (lo <= kSurrogateHi && hi >= kSurrogateLo) {
    if (lo < kSurrogateLo) add(lo, kSurrogateLo - 1);
    if (hi > kSurrogateHi) add(kSurrogateHi + 1, hi);
    return;
  }
  // Insert, then merge overlapping or adjacent neighbours.
  auto it = std::lower_bound(ranges_.begin(), ranges_.end(), lo,
                             [](const CodepointRange& r, uint32_t v) { return r.hi + 1 < v; });
  auto end = it;
  while (end != ranges_.end() && end->lo <= hi + 1) {
    lo = std::min(lo, end->lo);
    hi = std::max(hi, end->hi);
    ++end;
  }
  it = ranges_.erase(it, end);
  ranges_.insert(it, {lo, hi});
}

void CodepointSet::add(const CodepointSet& other) {
  for (const CodepointRange& r : other.ranges_) add(r.lo, r.hi);
}

CodepointSet CodepointSet::complement() const {
  CodepointSet out;
  uint32_t next = 0;
  for (const CodepointRange& r : ranges_) {
    if (r.lo > next) out.add(next, r.lo - 1);
    next = r.hi + 1;
  }
  if (next <= kMaxCodepoint) out.add(next, kMaxCodepoint);
  return out;
}

CodepointSet CodepointSet::intersect(const CodepointSet& other) const {
  CodepointSet out;
  size_t i = 0, j = 0;
  while (i < ranges_.size() && j < other.ranges_.size()) {
    const CodepointRange& a = ranges_[i];
    const CodepointRange& b = other.ranges_[j];
    const uint32_t lo = std::max(a.lo, b.lo), hi = std::min(a.hi, b.hi);
    if (lo <= hi) out.ranges_.push_back({lo, hi});
    if (a.hi < b.hi)
      ++i;
    else
      ++j;
  }
  return out;
}

bool CodepointSet::contains(uint32_t c) const {
  auto it = std::lower_bound(ranges_.begin(), ranges_.end(), c,
                             [](const CodepointRange& r, uint32_t v) { return r.hi < v; });
  return it != ranges_.end() && it->lo <= c;
}

void append_utf8(uint32_t c, std::string& out) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

ExprId GrammarAst::add(Expr e) {
  if (exprs_.size() >= kMaxExprs)
    STRATA_GRAMMAR_THROW("the grammar is too large (more than ", kMaxExprs, " expression nodes)");
  exprs_.push_back(std::move(e));
  return static_cast<ExprId>(exprs_.size() - 1);
}

ExprId GrammarAst::empty() {
  return add(Expr{});
}

ExprId GrammarAst::literal(std::string bytes) {
  if (bytes.empty()) return empty();
  Expr e;
  e.kind = ExprKind::Literal;
  e.literal = std::move(bytes);
  return add(std::move(e));
}

ExprId GrammarAst::chars(CodepointSet set, bool json_escape) {
  Expr e;
  e.kind = ExprKind::Chars;
  e.chars = std::move(set);
  e.json_escape = json_escape;
  return add(std::move(e));
}

ExprId GrammarAst::ref(int32_t rule) {
  Expr e;
  e.kind = ExprKind::RuleRef;
  e.rule = rule;
  return add(std::move(e));
}

ExprId GrammarAst::seq(std::vector<ExprId> items) {
  if (items.empty()) return empty();
  if (items.size() == 1) return items[0];
  Expr e;
  e.kind = ExprKind::Seq;
  e.items = std::move(items);
  return add(std::move(e));
}

ExprId GrammarAst::alt(std::vector<ExprId> items) {
  if (items.size() == 1) return items[0];
  Expr e;
  e.kind = ExprKind::Alt;  // no items: matches nothing
  e.items = std::move(items);
  return add(std::move(e));
}

ExprId GrammarAst::repeat(ExprId item, int32_t min, int32_t max) {
  if (min == 1 && max == 1) return item;
  Expr e;
  e.kind = ExprKind::Repeat;
  e.items = {item};
  e.min = min;
  e.max = max;
  return add(std::move(e));
}

int32_t GrammarAst::find_rule(std::string_view name) const {
  const auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? -1 : it->second;
}

int32_t GrammarAst::rule_index(std::string_view name) {
  const int32_t found = find_rule(name);
  if (found >= 0) return found;
  return add_rule(std::string(name), -1);
}

int32_t GrammarAst::add_rule(std::string name, ExprId body, bool shared) {
  if (rules.size() >= kMaxRules) STRATA_GRAMMAR_THROW("the grammar has more than ", kMaxRules, " rules");
  if (find_rule(name) >= 0) STRATA_GRAMMAR_THROW("rule '", name, "' is defined twice");
  by_name_.emplace(name, static_cast<int32_t>(rules.size()));
  RuleDef r;
  r.name = std::move(name);
  r.body = body;
  r.shared = shared;
  rules.push_back(std::move(r));
  return static_cast<int32_t>(rules.size() - 1);
}

namespace {

void print_codepoint(uint32_t c, bool in_class, std::string& out) {
  if (c == '"' && !in_class)
    out += "\\\"";
  else if (c == '\\')
    out += "\\\\";
  else if (in_class && (c == ']' || c == '[' || c == '-' || c == '^')) {
    out += '\\';
    out += static_cast<char>(c);
  } else if (c == '\n')
    out += "\\n";
  else if (c == '\r')
    out += "\\r";
  else if (c == '\t')
    out += "\\t";
  else if (c < 0x20 || c == 0x7F) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02X", c);
    out += buf;
  } else {
    append_utf8(c, out);
  }
}

void print_expr(const GrammarAst& ast, ExprId id, std::string& out, int depth) {
  const Expr& e = ast.expr(id);
  switch (e.kind) {
    case ExprKind::Empty:
      out += "\"\"";
      return;
    case ExprKind::Literal:
      out += '"';
      for (unsigned char c : e.literal) {
        if (c >= 0x80)
          out += static_cast<char>(c);  // UTF-8 passes through
        else
          print_codepoint(c, false, out);
      }
      out += '"';
      return;
    case ExprKind::Chars:
      out += e.json_escape ? "[json:" : "[";
      for (const CodepointRange& r : e.chars.ranges()) {
        print_codepoint(r.lo, true, out);
        if (r.hi != r.lo) {
          out += '-';
          print_codepoint(r.hi, true, out);
        }
      }
      out += ']';
      return;
    case ExprKind::RuleRef:
      out += ast.rules[static_cast<size_t>(e.rule)].name;
      return;
    case ExprKind::Seq:
    case ExprKind::Alt:
      if (e.items.empty()) {
        out += "[^\\x00-\\U0010FFFF]";  // nothing matches
        return;
      }
      if (depth > 0) out += '(';
      for (size_t i = 0; i < e.items.size(); ++i) {
        if (i) out += e.kind == ExprKind::Seq ? " " : " | ";
        print_expr(ast, e.items[i], out, depth + 1);
      }
      if (depth > 0) out += ')';
      return;
    case ExprKind::Repeat:
      out += '(';
      print_expr(ast, e.items[0], out, 0);
      out += ")";
      if (e.min == 0 && e.max == kUnbounded)
        out += '*';
      else if (e.min == 1 && e.max == kUnbounded)
        out += '+';
      else if (e.min == 0 && e.max == 1)
        out += '?';
      else {
        out += '{';
        out += std::to_string(e.min);
        if (e.max != e.min) {
          out += ',';
          if (e.max != kUnbounded) out += std::to_string(e.max);
        }
        out += '}';
      }
      return;
  }
}

}  // namespace

std::string to_gbnf(const GrammarAst& ast) {
  std::string out;
  for (const RuleDef& r : ast.rules) {
    if (r.body < 0) continue;
    out += r.name + " ::= ";
    print_expr(ast, r.body, out, 0);
    out += '\n';
  }
  return out;
}

}  // namespace strata::grammar
