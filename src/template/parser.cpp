#include "template/parser.h"

#include <functional>
#include <initializer_list>

#include "template/builtins.h"
#include "template/lexer.h"
#include "template/template_error.h"

namespace strata::jinja {

namespace {

[[noreturn]] void syntax_error(int line, const std::string& msg) {
  throw TemplateError(TemplateError::Kind::Syntax, line, msg);
}

ExprPtr make_expr(ExprKind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

std::string describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::Text:
      return "template data";
    case TokenKind::VarBegin:
      return "begin of print statement";
    case TokenKind::VarEnd:
      return "end of print statement";
    case TokenKind::BlockBegin:
      return "begin of statement block";
    case TokenKind::BlockEnd:
      return "end of statement block";
    case TokenKind::Name:
      return t.text;
    case TokenKind::String:
      return "string";
    case TokenKind::Integer:
      return "integer";
    case TokenKind::Float:
      return "float";
    case TokenKind::Op:
      return t.text;
    case TokenKind::Eof:
      return "end of template";
  }
  return "?";
}

// Marks names a macro body reads, to know whether it takes caller/varargs/kwargs.
void scan_names(const Expr* e, const std::function<void(const std::string&)>& f);
void scan_names(const Body& body, const std::function<void(const std::string&)>& f);

void scan_names(const Expr* e, const std::function<void(const std::string&)>& f) {
  if (!e) return;
  if (e->kind == ExprKind::Name) f(e->name);
  for (const auto& op : e->operands) scan_names(op.get(), f);
  for (const auto& kw : e->kwargs) scan_names(kw.second.get(), f);
  scan_names(e->dyn_args.get(), f);
  scan_names(e->dyn_kwargs.get(), f);
}

void scan_names(const Body& body, const std::function<void(const std::string&)>& f) {
  for (const auto& s : body) {
    scan_names(s->expr.get(), f);
    scan_names(s->condition.get(), f);
    for (const auto& [cond, b] : s->branches) {
      scan_names(cond.get(), f);
      scan_names(b, f);
    }
    scan_names(s->body, f);
    scan_names(s->else_body, f);
    for (const auto& a : s->assignments) scan_names(a.second.get(), f);
    if (s->kind == StmtKind::CallBlock && s->macro) scan_names(s->macro->body, f);
  }
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, const TemplateParseLimits& limits)
      : tokens_(std::move(tokens)), limits_(limits) {}

  TemplateAst parse() {
    TemplateAst ast;
    ast.body = subparse({});
    return ast;
  }

 private:
  // ---- token stream ----
  const Token& cur() const { return tokens_[pos_]; }
  const Token& peek() const { return tokens_[pos_ + 1 < tokens_.size() ? pos_ + 1 : pos_]; }
  void advance() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  bool is_op(const char* op) const { return cur().kind == TokenKind::Op && cur().text == op; }
  bool is_name(const char* name) const { return cur().kind == TokenKind::Name && cur().text == name; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    advance();
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    advance();
    return true;
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail(std::string("expected token '") + op + "', got '" + describe(cur()) + "'");
  }
  void expect_kind(TokenKind kind, const char* what) {
    if (cur().kind != kind) fail(std::string("expected ") + what + ", got '" + describe(cur()) + "'");
    advance();
  }
  std::string expect_name() {
    if (cur().kind != TokenKind::Name) fail("expected name, got '" + describe(cur()) + "'");
    std::string n = cur().text;
    advance();
    return n;
  }
  [[noreturn]] void fail(const std::string& msg) const { syntax_error(cur().line, msg); }

  // Bounds recursion so hostile nesting cannot exhaust the stack.
  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p_(p) {
      if (++p_.depth_ > p_.limits_.max_nesting)
        p_.fail("template nesting exceeds the limit of " + std::to_string(p_.limits_.max_nesting));
    }
    ~DepthGuard() { --p_.depth_; }
    Parser& p_;
  };

  // ---- statements ----
  Body subparse(std::initializer_list<const char*> end_names) {
    Body body;
    while (cur().kind != TokenKind::Eof) {
      const Token& t = cur();
      if (t.kind == TokenKind::Text) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::Text;
        s->line = t.line;
        s->text = t.text;
        body.push_back(std::move(s));
        advance();
      } else if (t.kind == TokenKind::VarBegin) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::Print;
        s->line = t.line;
        advance();
        s->expr = parse_tuple(false, true, {}, false);
        expect_kind(TokenKind::VarEnd, "end of print statement");
        body.push_back(std::move(s));
      } else if (t.kind == TokenKind::BlockBegin) {
        advance();
        for (const char* end : end_names)
          if (is_name(end)) return body;
        parse_statement(body);
        expect_kind(TokenKind::BlockEnd, "end of statement block");
      } else {
        fail("unexpected '" + describe(t) + "'");
      }
    }
    if (end_names.size() != 0) {
      std::string wanted;
      for (const char* end : end_names) wanted += (wanted.empty() ? "'" : " or '") + std::string(end) + "'";
      fail("Unexpected end of template. Jinja was looking for the following tags: " + wanted + ".");
    }
    return body;
  }

  Body parse_statements(std::initializer_list<const char*> end_names, bool drop_needle) {
    skip_op(":");
    expect_kind(TokenKind::BlockEnd, "end of statement block");
    Body body = subparse(end_names);
    if (drop_needle) advance();
    return body;
  }

  StmtPtr new_stmt(StmtKind kind) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = cur().line;
    return s;
  }

  void parse_statement(Body& out) {
    DepthGuard guard(*this);
    if (cur().kind != TokenKind::Name) fail("tag name expected");
    const std::string tag = cur().text;
    if (tag == "for") return out.push_back(parse_for());
    if (tag == "if") return out.push_back(parse_if());
    if (tag == "set") return out.push_back(parse_set());
    if (tag == "macro") return out.push_back(parse_macro());
    if (tag == "call") return out.push_back(parse_call_block());
    if (tag == "filter") return out.push_back(parse_filter_block());
    if (tag == "with") return out.push_back(parse_with());
    if (tag == "generation") {
      auto s = new_stmt(StmtKind::Scope);
      advance();
      s->body = parse_statements({"endgeneration"}, true);
      return out.push_back(std::move(s));
    }
    if (tag == "print") return parse_print(out);
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) fail("'" + tag + "' outside of a loop");
      auto s = new_stmt(tag == "break" ? StmtKind::Break : StmtKind::Continue);
      advance();
      return out.push_back(std::move(s));
    }
    if (tag == "include" || tag == "import" || tag == "from" || tag == "extends" || tag == "block")
      fail("tag '" + tag + "' is not supported: chat templates cannot load or inherit other templates");
    if (tag == "autoescape") fail("tag 'autoescape' is not supported");
    fail("Encountered unknown tag '" + tag + "'.");
  }

  StmtPtr parse_for() {
    auto s = new_stmt(StmtKind::For);
    advance();
    s->target = parse_assign_target(true, false, {"in"}, false);
    if (!skip_name("in")) fail("expected 'in', got '" + describe(cur()) + "'");
    s->expr = parse_tuple(false, false, {"recursive"}, false);
    if (skip_name("if")) s->condition = parse_expression(true);
    s->recursive = skip_name("recursive");
    ++loop_depth_;
    s->body = parse_statements({"endfor", "else"}, false);
    --loop_depth_;
    const bool has_else = is_name("else");
    advance();
    if (has_else) s->else_body = parse_statements({"endfor"}, true);
    return s;
  }

  StmtPtr parse_if() {
    auto s = new_stmt(StmtKind::If);
    advance();
    while (true) {
      ExprPtr cond = parse_tuple(false, false, {}, false);
      Body body = parse_statements({"elif", "else", "endif"}, false);
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (is_name("elif")) {
        advance();
        continue;
      }
      if (is_name("else")) {
        advance();
        s->branches.emplace_back(nullptr, parse_statements({"endif"}, true));
      } else {
        advance();  // endif
      }
      return s;
    }
  }

  StmtPtr parse_set() {
    auto s = new_stmt(StmtKind::Set);
    advance();
    s->target = parse_assign_target(true, false, {}, true);
    if (skip_op("=")) {
      s->expr = parse_tuple(false, true, {}, false);
      return s;
    }
    s->kind = StmtKind::SetBlock;
    if (is_op("|")) s->expr = parse_filter(nullptr, false);
    s->body = parse_statements({"endset"}, true);
    return s;
  }

  void parse_signature(MacroDef& m) {
    expect_op("(");
    while (!is_op(")")) {
      if (!m.params.empty()) expect_op(",");
      m.params.push_back(expect_name());
      if (skip_op("="))
        m.defaults.push_back(parse_expression(true));
      else if (!m.defaults.empty() && m.defaults.back())
        fail("non-default argument follows default argument");
      else
        m.defaults.push_back(nullptr);
    }
    expect_op(")");
  }

  void finish_macro(MacroDef& m) {
    scan_names(m.body, [&](const std::string& n) {
      m.uses_caller |= n == "caller";
      m.uses_varargs |= n == "varargs";
      m.uses_kwargs |= n == "kwargs";
    });
    for (const auto& d : m.defaults) {
      scan_names(d.get(), [&](const std::string& n) {
        m.uses_caller |= n == "caller";
        m.uses_varargs |= n == "varargs";
        m.uses_kwargs |= n == "kwargs";
      });
    }
  }

  StmtPtr parse_macro() {
    auto s = new_stmt(StmtKind::Macro);
    advance();
    s->macro = std::make_shared<MacroDef>();
    s->macro->line = s->line;
    s->macro->name = expect_name();
    parse_signature(*s->macro);
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    s->macro->body = parse_statements({"endmacro"}, true);
    loop_depth_ = saved_loops;
    finish_macro(*s->macro);
    return s;
  }

  StmtPtr parse_call_block() {
    auto s = new_stmt(StmtKind::CallBlock);
    advance();
    s->macro = std::make_shared<MacroDef>();
    s->macro->line = s->line;
    s->macro->name = "caller";
    if (is_op("(")) parse_signature(*s->macro);
    s->expr = parse_expression(true);
    if (s->expr->kind != ExprKind::Call) syntax_error(s->line, "expected call");
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    s->macro->body = parse_statements({"endcall"}, true);
    loop_depth_ = saved_loops;
    finish_macro(*s->macro);
    return s;
  }

  StmtPtr parse_filter_block() {
    auto s = new_stmt(StmtKind::FilterBlock);
    advance();
    s->expr = parse_filter(nullptr, true);
    s->body = parse_statements({"endfilter"}, true);
    return s;
  }

  StmtPtr parse_with() {
    auto s = new_stmt(StmtKind::With);
    advance();
    while (cur().kind != TokenKind::BlockEnd) {
      if (!s->assignments.empty()) expect_op(",");
      Target t = parse_assign_target(true, false, {}, false);
      expect_op("=");
      s->assignments.emplace_back(std::move(t), parse_expression(true));
    }
    s->body = parse_statements({"endwith"}, true);
    return s;
  }

  void parse_print(Body& out) {
    advance();
    bool first = true;
    while (cur().kind != TokenKind::BlockEnd) {
      if (!first) expect_op(",");
      first = false;
      auto s = new_stmt(StmtKind::Print);
      s->expr = parse_expression(true);
      out.push_back(std::move(s));
    }
  }

  // ---- assignment targets ----
  Target to_target(const Expr& e) {
    Target t;
    if (e.kind == ExprKind::Name) {
      t.kind = Target::Kind::Name;
      t.name = e.name;
      return t;
    }
    if (e.kind == ExprKind::Tuple) {
      t.kind = Target::Kind::Tuple;
      for (const auto& item : e.operands) t.items.push_back(to_target(*item));
      return t;
    }
    syntax_error(e.line, "can't assign to this expression");
  }

  Target parse_assign_target(bool with_tuple, bool name_only, std::initializer_list<const char*> extra_end,
                             bool with_namespace) {
    if (with_namespace && cur().kind == TokenKind::Name && peek().kind == TokenKind::Op &&
        peek().text == ".") {
      Target t;
      t.kind = Target::Kind::NamespaceAttr;
      t.name = expect_name();
      advance();
      t.attr = expect_name();
      return t;
    }
    if (name_only) {
      Target t;
      t.name = expect_name();
      return t;
    }
    ExprPtr e = with_tuple ? parse_tuple(true, true, extra_end, false) : parse_primary();
    return to_target(*e);
  }

  // ---- expressions ----
  bool is_tuple_end(std::initializer_list<const char*> extra_end) const {
    if (cur().kind == TokenKind::VarEnd || cur().kind == TokenKind::BlockEnd || is_op(")")) return true;
    for (const char* name : extra_end)
      if (is_name(name)) return true;
    return false;
  }

  ExprPtr parse_tuple(bool simplified, bool with_condexpr, std::initializer_list<const char*> extra_end,
                      bool explicit_parentheses) {
    const int line = cur().line;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (is_tuple_end(extra_end)) break;
      items.push_back(simplified ? parse_primary() : parse_expression(with_condexpr));
      if (is_op(","))
        is_tuple = true;
      else
        break;
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parentheses) fail("Expected an expression, got '" + describe(cur()) + "'");
    }
    auto t = make_expr(ExprKind::Tuple, line);
    t->operands = std::move(items);
    return t;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(*this);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    ExprPtr expr = parse_or();
    while (is_name("if")) {
      const int line = cur().line;
      advance();
      auto c = make_expr(ExprKind::CondExpr, line);
      ExprPtr test = parse_or();
      ExprPtr otherwise = skip_name("else") ? parse_expression(true) : nullptr;
      c->operands.push_back(std::move(test));
      c->operands.push_back(std::move(expr));
      c->operands.push_back(std::move(otherwise));
      expr = std::move(c);
    }
    return expr;
  }

  ExprPtr binary_node(ExprKind kind, ExprPtr left, ExprPtr right, int line) {
    auto e = make_expr(kind, line);
    e->operands.push_back(std::move(left));
    e->operands.push_back(std::move(right));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      const int line = cur().line;
      advance();
      left = binary_node(ExprKind::Or, std::move(left), parse_and(), line);
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      const int line = cur().line;
      advance();
      left = binary_node(ExprKind::And, std::move(left), parse_not(), line);
    }
    return left;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(*this);
      auto e = make_expr(ExprKind::Not, cur().line);
      advance();
      e->operands.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  bool compare_op(CompareOp& op) const {
    if (cur().kind == TokenKind::Op) {
      const std::string& t = cur().text;
      if (t == "==")
        op = CompareOp::Eq;
      else if (t == "!=")
        op = CompareOp::Ne;
      else if (t == "<")
        op = CompareOp::Lt;
      else if (t == "<=")
        op = CompareOp::Le;
      else if (t == ">")
        op = CompareOp::Gt;
      else if (t == ">=")
        op = CompareOp::Ge;
      else
        return false;
      return true;
    }
    if (is_name("in")) {
      op = CompareOp::In;
      return true;
    }
    if (is_name("not") && peek().kind == TokenKind::Name && peek().text == "in") {
      op = CompareOp::NotIn;
      return true;
    }
    return false;
  }

  ExprPtr parse_compare() {
    const int line = cur().line;
    ExprPtr first = parse_math1();
    CompareOp op;
    if (!compare_op(op)) return first;
    auto e = make_expr(ExprKind::Compare, line);
    e->operands.push_back(std::move(first));
    while (compare_op(op)) {
      advance();
      if (op == CompareOp::NotIn) advance();
      e->compare_ops.push_back(op);
      e->operands.push_back(parse_math1());
    }
    return e;
  }

  ExprPtr arith_node(BinaryOp op, ExprPtr left, ExprPtr right, int line) {
    auto e = binary_node(ExprKind::Binary, std::move(left), std::move(right), line);
    e->bin_op = op;
    return e;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const BinaryOp op = is_op("+") ? BinaryOp::Add : BinaryOp::Sub;
      const int line = cur().line;
      advance();
      left = arith_node(op, std::move(left), parse_concat(), line);
    }
    return left;
  }

  ExprPtr parse_concat() {
    const int line = cur().line;
    ExprPtr first = parse_math2();
    if (!is_op("~")) return first;
    auto e = make_expr(ExprKind::Concat, line);
    e->operands.push_back(std::move(first));
    while (skip_op("~")) e->operands.push_back(parse_math2());
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const BinaryOp op = is_op("*")    ? BinaryOp::Mul
                          : is_op("/")  ? BinaryOp::Div
                          : is_op("//") ? BinaryOp::FloorDiv
                                        : BinaryOp::Mod;
      const int line = cur().line;
      advance();
      left = arith_node(op, std::move(left), parse_pow(), line);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      const int line = cur().line;
      advance();
      left = arith_node(BinaryOp::Pow, std::move(left), parse_unary(true), line);
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      node = make_expr(is_op("-") ? ExprKind::Neg : ExprKind::Pos, cur().line);
      advance();
      node->operands.push_back(parse_unary(false));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    ExprPtr node;
    if (t.kind == TokenKind::Name) {
      node = make_expr(ExprKind::Const, t.line);
      if (t.text == "true" || t.text == "True")
        node->constant = Value::boolean(true);
      else if (t.text == "false" || t.text == "False")
        node->constant = Value::boolean(false);
      else if (t.text == "none" || t.text == "None")
        node->constant = Value::none();
      else
        node->kind = ExprKind::Name, node->name = t.text;
      advance();
    } else if (t.kind == TokenKind::String) {
      node = make_expr(ExprKind::Const, t.line);
      std::string s;
      while (cur().kind == TokenKind::String) {
        s += cur().text;
        advance();
      }
      node->constant = Value::string(std::move(s));
    } else if (t.kind == TokenKind::Integer || t.kind == TokenKind::Float) {
      node = make_expr(ExprKind::Const, t.line);
      node->constant =
          t.kind == TokenKind::Integer ? Value::integer(t.int_value) : Value::number(t.float_value);
      advance();
    } else if (is_op("(")) {
      advance();
      node = parse_tuple(false, true, {}, true);
      expect_op(")");
    } else if (is_op("[")) {
      node = parse_list();
    } else if (is_op("{")) {
      node = parse_dict();
    } else {
      fail("unexpected '" + describe(t) + "'");
    }
    return node;
  }

  ExprPtr parse_list() {
    auto e = make_expr(ExprKind::List, cur().line);
    expect_op("[");
    while (!is_op("]")) {
      if (!e->operands.empty()) expect_op(",");
      if (is_op("]")) break;
      e->operands.push_back(parse_expression(true));
    }
    expect_op("]");
    return e;
  }

  ExprPtr parse_dict() {
    auto e = make_expr(ExprKind::Dict, cur().line);
    expect_op("{");
    while (!is_op("}")) {
      if (!e->operands.empty()) expect_op(",");
      if (is_op("}")) break;
      e->operands.push_back(parse_expression(true));
      expect_op(":");
      e->operands.push_back(parse_expression(true));
    }
    expect_op("}");
    return e;
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".") || is_op("["))
        node = parse_subscript(std::move(node));
      else if (is_op("("))
        node = parse_call(std::move(node));
      else
        return node;
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|"))
        node = parse_filter(std::move(node), false);
      else if (is_name("is"))
        node = parse_test(std::move(node));
      else if (is_op("("))
        node = parse_call(std::move(node));
      else
        return node;
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const int line = cur().line;
    if (skip_op(".")) {
      if (cur().kind == TokenKind::Name) {
        auto e = make_expr(ExprKind::GetAttr, line);
        e->name = cur().text;
        advance();
        e->operands.push_back(std::move(node));
        return e;
      }
      if (cur().kind != TokenKind::Integer) fail("expected name or number");
      auto key = make_expr(ExprKind::Const, line);
      key->constant = Value::integer(cur().int_value);
      advance();
      return binary_node(ExprKind::GetItem, std::move(node), std::move(key), line);
    }
    expect_op("[");
    std::vector<ExprPtr> args;
    ExprPtr slice;
    while (!is_op("]")) {
      if (!args.empty() || slice) expect_op(",");
      ExprPtr a = parse_subscribed(slice);
      if (a) args.push_back(std::move(a));
    }
    expect_op("]");
    if (slice) {
      if (!args.empty()) syntax_error(line, "slices inside a tuple subscript are not supported");
      slice->operands[0] = std::move(node);
      return slice;
    }
    if (args.empty()) syntax_error(line, "expected subscript expression");
    ExprPtr key;
    if (args.size() == 1) {
      key = std::move(args[0]);
    } else {
      key = make_expr(ExprKind::Tuple, line);
      key->operands = std::move(args);
    }
    return binary_node(ExprKind::GetItem, std::move(node), std::move(key), line);
  }

  // One subscript item: an expression (returned) or a slice (stored in `slice`, returns null).
  ExprPtr parse_subscribed(ExprPtr& slice) {
    const int line = cur().line;
    ExprPtr start;
    if (!is_op(":")) {
      start = parse_expression(true);
      if (!is_op(":")) return start;
    }
    if (slice) syntax_error(line, "only one slice per subscript is supported");
    advance();  // ':'
    slice = make_expr(ExprKind::Slice, line);
    slice->operands.resize(4);
    slice->operands[1] = std::move(start);
    if (!is_op("]") && !is_op(",") && !is_op(":")) slice->operands[2] = parse_expression(true);
    if (skip_op(":") && !is_op("]") && !is_op(",")) slice->operands[3] = parse_expression(true);
    return nullptr;
  }

  void parse_call_args(Expr& e) {
    const int line = cur().line;
    expect_op("(");
    bool require_comma = false;
    auto ensure = [&](bool ok) {
      if (!ok) syntax_error(line, "invalid syntax for function call expression");
    };
    while (!is_op(")")) {
      if (require_comma) {
        expect_op(",");
        if (is_op(")")) break;
      }
      if (is_op("*")) {
        ensure(!e.dyn_args && !e.dyn_kwargs);
        advance();
        e.dyn_args = parse_expression(true);
      } else if (is_op("**")) {
        ensure(!e.dyn_kwargs);
        advance();
        e.dyn_kwargs = parse_expression(true);
      } else if (cur().kind == TokenKind::Name && peek().kind == TokenKind::Op && peek().text == "=") {
        ensure(!e.dyn_kwargs);
        std::string key = cur().text;
        advance();
        advance();
        e.kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        ensure(!e.dyn_args && !e.dyn_kwargs && e.kwargs.empty());
        e.operands.push_back(parse_expression(true));
      }
      require_comma = true;
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto e = make_expr(ExprKind::Call, cur().line);
    e->operands.push_back(std::move(callee));
    parse_call_args(*e);
    return e;
  }

  std::string parse_dotted_name() {
    std::string name = expect_name();
    while (skip_op(".")) {
      name.push_back('.');
      name += expect_name();
    }
    return name;
  }

  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
    while (is_op("|") || start_inline) {
      if (!start_inline) advance();
      start_inline = false;
      auto e = make_expr(ExprKind::Filter, cur().line);
      e->name = parse_dotted_name();
      if (!find_filter(e->name)) syntax_error(e->line, "No filter named '" + e->name + "'.");
      e->operands.push_back(std::move(node));
      if (is_op("(")) parse_call_args(*e);
      node = std::move(e);
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    const int line = cur().line;
    advance();  // 'is'
    const bool negated = skip_name("not");
    auto e = make_expr(ExprKind::Test, line);
    e->name = parse_dotted_name();
    if (!find_test(e->name)) syntax_error(line, "No test named '" + e->name + "'.");
    e->operands.push_back(std::move(node));
    const TokenKind k = cur().kind;
    if (is_op("(")) {
      parse_call_args(*e);
    } else if ((k == TokenKind::Name || k == TokenKind::String || k == TokenKind::Integer ||
                k == TokenKind::Float || is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail("You cannot chain multiple tests with is");
      e->operands.push_back(parse_postfix(parse_primary()));
    }
    if (!negated) return e;
    auto n = make_expr(ExprKind::Not, line);
    n->operands.push_back(std::move(e));
    return n;
  }

  std::vector<Token> tokens_;
  const TemplateParseLimits& limits_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

TemplateAst parse_template(std::string_view source, const TemplateParseLimits& limits) {
  if (source.size() > limits.max_source_bytes)
    throw TemplateError(
        TemplateError::Kind::Syntax, 0,
        "template source exceeds the limit of " + std::to_string(limits.max_source_bytes) + " bytes");
  return Parser(tokenize(source), limits).parse();
}

}  // namespace strata::jinja
