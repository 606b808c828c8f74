// Renders a parsed template: statements, expressions, scopes and the sandbox limits.
//
// Scoping follows Jinja2: each for-loop iteration, macro call, caller(), with-block and
// {% generation %} body gets a fresh scope whose parent is the enclosing one; `set` writes to
// the current scope (so it does not leak out of a loop, hence namespace()); `if` has no scope.
// Macros see the scope they were defined in, live (a later top-level `set` is visible).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "template/ast.h"
#include "template/template_error.h"
#include "template/template_limits.h"
#include "template/value.h"

namespace strata::jinja {

class Scope : public std::enable_shared_from_this<Scope> {
 public:
  explicit Scope(Scope* parent) : parent_(parent) {}
  // Walks the enclosing scopes; nullptr when the name is not set anywhere.
  const Value* lookup(std::string_view name) const;
  void set(std::string_view name, Value v);
  Scope* parent() const { return parent_; }

 private:
  Scope* parent_;
  std::vector<std::pair<std::string, Value>> vars_;
};

class Interpreter {
 public:
  Interpreter(const TemplateLimits& limits, std::optional<int64_t> now_unix);
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Renders `ast`; `context` (globals + render variables) is the outermost scope.
  // Every failure surfaces as TemplateError.
  std::string render(const TemplateAst& ast, const std::shared_ptr<Scope>& context);

  // ---- services for builtins ----
  const TemplateLimits& limits() const { return limits_; }
  std::optional<int64_t> now_unix() const { return now_unix_; }
  // Counts one step of work and enforces the time limit.
  void tick();
  void check_time() const;
  // Values created by template operations go through these: they enforce size/depth limits
  // and charge the allocation budget.
  Value new_string(std::string s);
  Value new_list(std::vector<Value> items, bool is_tuple = false);
  Value new_dict(DictData d);
  Value new_iterator(std::vector<Value> items, const char* type);
  // Throws LimitExceeded if a string of n bytes would break the size limit.
  void check_string_size(size_t n) const;
  void check_container_size(size_t n) const;
  void count_iterations(int64_t n);
  [[noreturn]] void limit_exceeded(const std::string& msg) const;
  [[noreturn]] void raise_from_template(const std::string& msg) const;

  std::string str(const Value& v) const { return to_str(v, limits_.max_output_bytes); }
  // Items of an iterable (dict keys, string characters, ...); consumes generators.
  std::shared_ptr<const std::vector<Value>> iterate(const Value& v);
  Value call(const Value& callee, CallArgs& args);
  Value call_filter(std::string_view name, const Value& input, const CallArgs& args);
  bool call_test(std::string_view name, const Value& input, const CallArgs& args);
  // `obj.name` and `obj[key]` with the sandbox's lookup rules.
  Value get_attr(const Value& obj, std::string_view name);
  Value get_item(const Value& obj, const Value& key);

  Value call_macro(const MacroDef& m, Scope* closure, CallArgs& args);
  // loop(items) of a recursive for loop: renders it at `depth` and returns the text.
  Value call_loop(const Stmt& for_stmt, Scope* scope, const Value& items, int depth);

 private:
  enum class Flow { Normal, Break, Continue };

  std::shared_ptr<Scope> new_scope(Scope* parent);
  void pin(Scope& scope);
  void emit(std::string_view text);
  std::string capture(const std::function<void()>& body);

  Flow exec_body(const Body& body, Scope& scope);
  Flow exec(const Stmt& s, Scope& scope);
  void exec_if(const Stmt& s, Scope& scope, Flow& flow);
  void exec_for(const Stmt& s, Scope& scope, const Value& iterable, int depth);
  void exec_set_block(const Stmt& s, Scope& scope);
  void exec_call_block(const Stmt& s, Scope& scope);
  void exec_filter_block(const Stmt& s, Scope& scope);
  void exec_with(const Stmt& s, Scope& scope);
  void assign(const Target& t, const Value& v, Scope& scope);

  Value eval(const Expr& e, Scope& scope);
  Value eval_name(const Expr& e, Scope& scope);
  Value eval_literal(const Expr& e, Scope& scope);
  Value eval_slice(const Expr& e, Scope& scope);
  void eval_args(const Expr& e, size_t first, Scope& scope, CallArgs& out);
  Value eval_call(const Expr& e, Scope& scope);
  // Filter chain; `placeholder` stands for the innermost null input ({% filter %} blocks).
  Value eval_filter(const Expr& e, Scope& scope, const Value* placeholder);
  Value eval_test(const Expr& e, Scope& scope);
  Value eval_compare(const Expr& e, Scope& scope);
  Value eval_concat(const Expr& e, Scope& scope);

  TemplateLimits limits_;
  std::optional<int64_t> now_unix_;
  std::chrono::steady_clock::time_point deadline_;
  uint64_t ticks_ = 0;
  int64_t iterations_ = 0;
  size_t allocated_ = 0;
  int call_depth_ = 0;
  int line_ = 0;  // line of the node being evaluated, for error messages
  std::string* out_ = nullptr;
  std::vector<std::shared_ptr<Scope>> pinned_;
};

}  // namespace strata::jinja
