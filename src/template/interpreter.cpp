#include "template/interpreter.h"

#include <algorithm>

#include "template/builtins.h"
#include "template/objects.h"
#include "template/operators.h"
#include "template/text_util.h"

namespace strata::jinja {

// ---- Scope ---------------------------------------------------------------------------------

const Value* Scope::lookup(std::string_view name) const {
  for (const Scope* s = this; s; s = s->parent_) {
    for (const auto& [k, v] : s->vars_)
      if (k == name) return &v;
  }
  return nullptr;
}

void Scope::set(std::string_view name, Value v) {
  for (auto& [k, old] : vars_) {
    if (k == name) {
      old = std::move(v);
      return;
    }
  }
  vars_.emplace_back(std::string(name), std::move(v));
}

// ---- limits and value creation -------------------------------------------------------------

Interpreter::Interpreter(const TemplateLimits& limits, std::optional<int64_t> now_unix)
    : limits_(limits), now_unix_(now_unix) {}

void Interpreter::limit_exceeded(const std::string& msg) const {
  throw TemplateError(TemplateError::Kind::LimitExceeded, line_, msg);
}

void Interpreter::raise_from_template(const std::string& msg) const {
  throw TemplateError(TemplateError::Kind::Raised, line_, msg);
}

void Interpreter::tick() {
  // The clock is read every 8 steps (a read costs ~25 ns, a step ~1 us); single steps are kept
  // short by the size limits, and big strings check the clock themselves (new_string).
  if ((++ticks_ & 7) == 0) check_time();
}

void Interpreter::check_time() const {
  if (std::chrono::steady_clock::now() > deadline_)
    limit_exceeded("render time exceeds the limit of " + std::to_string(limits_.max_time_ms) + " ms");
}

void Interpreter::count_iterations(int64_t n) {
  iterations_ += n;
  if (iterations_ > limits_.max_loop_iterations)
    limit_exceeded("loop iterations exceed the limit of " + std::to_string(limits_.max_loop_iterations));
  tick();
}

void Interpreter::check_string_size(size_t n) const {
  if (n > limits_.max_output_bytes)
    limit_exceeded("string of " + std::to_string(n) + " bytes exceeds the limit of " +
                   std::to_string(limits_.max_output_bytes));
}

void Interpreter::check_container_size(size_t n) const {
  if (n > limits_.max_container_items)
    limit_exceeded("container of " + std::to_string(n) + " items exceeds the limit of " +
                   std::to_string(limits_.max_container_items));
}

Value Interpreter::new_string(std::string s) {
  check_string_size(s.size());
  if (s.size() > (1u << 20)) check_time();  // producing it took a while
  allocated_ += s.size();
  if (allocated_ > limits_.max_alloc_bytes)
    limit_exceeded("memory allocated by the template exceeds " + std::to_string(limits_.max_alloc_bytes) +
                   " bytes");
  return Value::string(std::move(s));
}

Value Interpreter::new_list(std::vector<Value> items, bool is_tuple) {
  check_container_size(items.size());
  allocated_ += items.size() * sizeof(Value);
  if (allocated_ > limits_.max_alloc_bytes)
    limit_exceeded("memory allocated by the template exceeds " + std::to_string(limits_.max_alloc_bytes) +
                   " bytes");
  Value v = Value::list(std::move(items), is_tuple);
  if (v.depth() > limits_.max_value_depth)
    limit_exceeded("value nesting exceeds the limit of " + std::to_string(limits_.max_value_depth));
  return v;
}

Value Interpreter::new_dict(DictData d) {
  check_container_size(d.size());
  allocated_ += d.size() * 2 * sizeof(Value);
  if (allocated_ > limits_.max_alloc_bytes)
    limit_exceeded("memory allocated by the template exceeds " + std::to_string(limits_.max_alloc_bytes) +
                   " bytes");
  if (d.depth > limits_.max_value_depth)
    limit_exceeded("value nesting exceeds the limit of " + std::to_string(limits_.max_value_depth));
  return Value::dict(std::move(d));
}

Value Interpreter::new_iterator(std::vector<Value> items, const char* type) {
  check_container_size(items.size());
  allocated_ += items.size() * sizeof(Value);
  return Value::object(std::make_shared<IteratorObject>(std::move(items), type));
}

// ---- rendering -----------------------------------------------------------------------------

std::string Interpreter::render(const TemplateAst& ast, const std::shared_ptr<Scope>& context) {
  deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(limits_.max_time_ms);
  std::string out;
  out_ = &out;
  // Top-level `set` writes to its own scope over the context, as Jinja writes to the
  // template's context.
  auto top = new_scope(context.get());
  try {
    exec_body(ast.body, *top);
  } catch (const TemplateError&) {
    pinned_.clear();
    throw;
  } catch (const Error& e) {
    pinned_.clear();
    throw TemplateError(TemplateError::Kind::Runtime, line_, e.what());
  } catch (const std::bad_alloc&) {
    pinned_.clear();
    throw TemplateError(TemplateError::Kind::LimitExceeded, line_, "out of memory");
  } catch (const std::exception& e) {  // e.g. std::length_error: still one clean error
    pinned_.clear();
    throw TemplateError(TemplateError::Kind::Runtime, line_, e.what());
  }
  pinned_.clear();
  return out;
}

std::shared_ptr<Scope> Interpreter::new_scope(Scope* parent) {
  return std::make_shared<Scope>(parent);
}

void Interpreter::pin(Scope& scope) {
  if (!pinned_.empty() && pinned_.back().get() == &scope) return;
  // A macro defined in a loop pins one scope per iteration: charge them to the budget.
  allocated_ += 256;
  if (allocated_ > limits_.max_alloc_bytes)
    limit_exceeded("memory allocated by the template exceeds " + std::to_string(limits_.max_alloc_bytes) +
                   " bytes");
  pinned_.push_back(scope.shared_from_this());
}

void Interpreter::emit(std::string_view text) {
  if (out_->size() + text.size() > limits_.max_output_bytes)
    limit_exceeded("output exceeds the limit of " + std::to_string(limits_.max_output_bytes) + " bytes");
  out_->append(text);
}

std::string Interpreter::capture(const std::function<void()>& body) {
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  try {
    body();
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return buffer;
}

Interpreter::Flow Interpreter::exec_body(const Body& body, Scope& scope) {
  for (const StmtPtr& s : body) {
    const Flow f = exec(*s, scope);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s, Scope& scope) {
  line_ = s.line;
  tick();
  Flow flow = Flow::Normal;
  switch (s.kind) {
    case StmtKind::Text:
      emit(s.text);
      break;
    case StmtKind::Print: {
      const Value v = eval(*s.expr, scope);
      if (v.is_string())
        emit(v.as_string());
      else
        emit(str(v));
      break;
    }
    case StmtKind::If:
      exec_if(s, scope, flow);
      break;
    case StmtKind::For:
      exec_for(s, scope, eval(*s.expr, scope), 1);
      break;
    case StmtKind::Set:
      assign(s.target, eval(*s.expr, scope), scope);
      break;
    case StmtKind::SetBlock:
      exec_set_block(s, scope);
      break;
    case StmtKind::Macro: {
      pin(scope);
      scope.set(s.macro->name, Value::object(std::make_shared<MacroObject>(s.macro.get(), &scope)));
      break;
    }
    case StmtKind::CallBlock:
      exec_call_block(s, scope);
      break;
    case StmtKind::FilterBlock:
      exec_filter_block(s, scope);
      break;
    case StmtKind::With:
      exec_with(s, scope);
      break;
    case StmtKind::Break:
      flow = Flow::Break;
      break;
    case StmtKind::Continue:
      flow = Flow::Continue;
      break;
    case StmtKind::Scope:
      exec_body(s.body, *new_scope(&scope));
      break;
  }
  return flow;
}

void Interpreter::exec_if(const Stmt& s, Scope& scope, Flow& flow) {
  for (const auto& [cond, body] : s.branches) {
    if (!cond || truthy(eval(*cond, scope))) {
      flow = exec_body(body, scope);
      return;
    }
  }
}

void Interpreter::exec_for(const Stmt& s, Scope& scope, const Value& iterable, int depth) {
  std::shared_ptr<const std::vector<Value>> items = iterate(iterable);
  if (s.condition) {
    std::vector<Value> kept;
    for (const Value& item : *items) {
      count_iterations(1);
      auto tmp = new_scope(&scope);
      assign(s.target, item, *tmp);
      if (truthy(eval(*s.condition, *tmp))) kept.push_back(item);
    }
    items = std::make_shared<const std::vector<Value>>(std::move(kept));
  }
  if (items->empty()) {
    if (!s.else_body.empty()) exec_body(s.else_body, *new_scope(&scope));
    return;
  }
  auto loop = std::make_shared<LoopObject>(items, depth, &s, &scope);
  const Value loop_value = Value::object(loop);
  for (size_t i = 0; i < items->size(); ++i) {
    count_iterations(1);
    auto iter_scope = new_scope(&scope);
    loop->set_index(i);
    assign(s.target, (*items)[i], *iter_scope);
    iter_scope->set("loop", loop_value);
    if (exec_body(s.body, *iter_scope) == Flow::Break) break;
  }
}

Value Interpreter::call_loop(const Stmt& for_stmt, Scope* scope, const Value& items, int depth) {
  if (!for_stmt.recursive)
    STRATA_THROW("The loop must have the 'recursive' marker to be called recursively.");
  if (++call_depth_ > limits_.max_call_depth) {
    --call_depth_;
    limit_exceeded("call depth exceeds the limit of " + std::to_string(limits_.max_call_depth));
  }
  std::string text;
  try {
    text = capture([&] { exec_for(for_stmt, *scope, items, depth); });
  } catch (...) {
    --call_depth_;
    throw;
  }
  --call_depth_;
  return new_string(std::move(text));
}

void Interpreter::exec_set_block(const Stmt& s, Scope& scope) {
  const std::string text = capture([&] { exec_body(s.body, *new_scope(&scope)); });
  Value v = new_string(text);
  if (s.expr) v = eval_filter(*s.expr, scope, &v);
  assign(s.target, v, scope);
}

void Interpreter::exec_call_block(const Stmt& s, Scope& scope) {
  pin(scope);
  const Expr& call = *s.expr;
  const Value callee = eval(*call.operands[0], scope);
  CallArgs args;
  eval_args(call, 1, scope, args);
  args.kwargs.emplace_back("caller", Value::object(std::make_shared<MacroObject>(s.macro.get(), &scope)));
  line_ = s.line;
  const Value result = this->call(callee, args);
  emit(result.is_string() ? result.as_string() : str(result));
}

void Interpreter::exec_filter_block(const Stmt& s, Scope& scope) {
  const std::string text = capture([&] { exec_body(s.body, *new_scope(&scope)); });
  const Value input = new_string(text);
  const Value result = eval_filter(*s.expr, scope, &input);
  emit(result.is_string() ? result.as_string() : str(result));
}

void Interpreter::exec_with(const Stmt& s, Scope& scope) {
  auto inner = new_scope(&scope);
  for (const auto& [target, expr] : s.assignments) assign(target, eval(*expr, scope), *inner);
  exec_body(s.body, *inner);
}

void Interpreter::assign(const Target& t, const Value& v, Scope& scope) {
  switch (t.kind) {
    case Target::Kind::Name:
      scope.set(t.name, v);
      return;
    case Target::Kind::Tuple: {
      const auto items = iterate(v);
      if (items->size() > t.items.size())
        STRATA_THROW("too many values to unpack (expected ", t.items.size(), ")");
      if (items->size() < t.items.size())
        STRATA_THROW("not enough values to unpack (expected ", t.items.size(), ", got ", items->size(), ")");
      for (size_t i = 0; i < t.items.size(); ++i) assign(t.items[i], (*items)[i], scope);
      return;
    }
    case Target::Kind::NamespaceAttr: {
      const Value* ns = scope.lookup(t.name);
      auto* obj = ns && ns->is_object() ? dynamic_cast<NamespaceObject*>(&ns->as_object()) : nullptr;
      if (!obj) STRATA_THROW("cannot assign attribute on non-namespace object");
      obj->set(t.attr, v);
      return;
    }
  }
}

// ---- calls ---------------------------------------------------------------------------------

Value Interpreter::call(const Value& callee, CallArgs& args) {
  tick();
  if (callee.is_undefined()) throw Error(callee.undefined_message());
  if (!callee.is_object() || !callee.as_object().callable())
    STRATA_THROW("'", type_name(callee), "' object is not callable");
  return callee.as_object().call(*this, args);
}

Value Interpreter::call_filter(std::string_view name, const Value& input, const CallArgs& args) {
  const FilterFn f = find_filter(name);
  if (!f) STRATA_THROW("No filter named '", name, "'.");
  tick();
  return f(*this, input, args);
}

bool Interpreter::call_test(std::string_view name, const Value& input, const CallArgs& args) {
  const TestFn f = find_test(name);
  if (!f) STRATA_THROW("No test named '", name, "'.");
  return f(*this, input, args);
}

Value Interpreter::call_macro(const MacroDef& m, Scope* closure, CallArgs& args) {
  if (++call_depth_ > limits_.max_call_depth) {
    --call_depth_;
    limit_exceeded("call depth exceeds the limit of " + std::to_string(limits_.max_call_depth) +
                   " (recursive macro?)");
  }
  struct DepthRestore {
    Interpreter* in;
    int line;
    ~DepthRestore() {
      --in->call_depth_;
      in->line_ = line;
    }
  } restore{this, line_};
  auto scope = new_scope(closure);
  const size_t n = m.params.size();
  std::vector<bool> bound(n, false);
  std::vector<Value> extra;
  for (size_t i = 0; i < args.args.size(); ++i) {
    if (i < n)
      scope->set(m.params[i], args.args[i]), bound[i] = true;
    else
      extra.push_back(args.args[i]);
  }
  if (!extra.empty() && !m.uses_varargs)
    STRATA_THROW("macro '", m.name, "' takes not more than ", n, " argument(s)");
  DictData extra_kwargs;
  Value caller = Value::undefined("No caller defined");
  for (auto& [key, value] : args.kwargs) {
    const auto it = std::find(m.params.begin(), m.params.end(), key);
    if (it != m.params.end()) {
      const size_t idx = static_cast<size_t>(it - m.params.begin());
      if (bound[idx]) STRATA_THROW("macro '", m.name, "' got multiple values for argument '", key, "'");
      scope->set(key, value);
      bound[idx] = true;
    } else if (key == "caller" && m.uses_caller) {
      caller = value;
    } else if (m.uses_kwargs) {
      extra_kwargs.set(Value::string(key), value);
    } else {
      STRATA_THROW("macro '", m.name, "' takes no keyword argument '", key, "'");
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (bound[i]) continue;
    scope->set(m.params[i], m.defaults[i]
                                ? eval(*m.defaults[i], *scope)
                                : Value::undefined("parameter '" + m.params[i] + "' was not provided"));
  }
  if (m.uses_varargs) scope->set("varargs", new_list(std::move(extra), true));
  if (m.uses_kwargs) scope->set("kwargs", new_dict(std::move(extra_kwargs)));
  if (m.uses_caller) scope->set("caller", caller);
  return new_string(capture([&] { exec_body(m.body, *scope); }));
}

// ---- attribute and item access -------------------------------------------------------------

Value Interpreter::get_attr(const Value& obj, std::string_view name) {
  if (obj.is_undefined()) throw Error(obj.undefined_message());
  if (obj.is_object()) return obj.as_object().get_attr(name);
  if (std::optional<Value> attr = python_attribute(*this, obj, name)) return *attr;
  if (obj.is_dict()) {
    if (const Value* v = obj.as_dict().find(name)) return *v;
    return Value::undefined(concat("'dict object' has no attribute '", name, "'"));
  }
  return Value::undefined(concat("'", type_name(obj), " object' has no attribute '", name, "'"));
}

namespace {

// Python index normalisation; false when out of range.
bool normalize_index(int64_t& i, size_t size) {
  if (i < 0) i += static_cast<int64_t>(size);
  return i >= 0 && static_cast<size_t>(i) < size;
}

}  // namespace

Value Interpreter::get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) throw Error(obj.undefined_message());
  if (obj.is_dict()) {
    if (is_hashable(key))
      if (const Value* v = obj.as_dict().find(key)) return *v;
  } else if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.to_int();
    if (obj.is_list()) {
      const auto& items = obj.as_list().items;
      if (normalize_index(i, items.size())) return items[static_cast<size_t>(i)];
    } else if (const std::string& s = obj.as_string(); is_ascii(s)) {
      if (normalize_index(i, s.size())) return Value::string(s.substr(static_cast<size_t>(i), 1));
    } else {
      const std::vector<size_t> offsets = utf8_offsets(s);
      if (normalize_index(i, offsets.size() - 1)) {
        const auto u = static_cast<size_t>(i);
        return Value::string(s.substr(offsets[u], offsets[u + 1] - offsets[u]));
      }
    }
  } else if (key.is_string()) {
    if (obj.is_object()) return obj.as_object().get_attr(key.as_string());
    if (std::optional<Value> attr = python_attribute(*this, obj, key.as_string())) return *attr;
  }
  if (obj.is_dict() && key.is_string())
    if (std::optional<Value> attr = python_attribute(*this, obj, key.as_string())) return *attr;
  std::string shown = "...";
  try {
    shown = to_repr(key, 200);
  } catch (const Error&) {  // a key too long to show in a message
  }
  return Value::undefined(concat("'", type_name(obj), " object' has no element ", shown));
}

std::shared_ptr<const std::vector<Value>> Interpreter::iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::List:
      return {v.list_ptr(), &v.as_list().items};
    case Value::Kind::Undefined:
      return std::make_shared<const std::vector<Value>>();
    case Value::Kind::Dict: {
      std::vector<Value> keys;
      keys.reserve(v.as_dict().size());
      for (const auto& kv : v.as_dict().items()) keys.push_back(kv.first);
      return std::make_shared<const std::vector<Value>>(std::move(keys));
    }
    case Value::Kind::String: {
      const std::string& s = v.as_string();
      check_container_size(utf8_length(s));
      std::vector<Value> chars;
      for (size_t i = 0; i < s.size();) {
        const size_t start = i;
        utf8_next(s, i);
        chars.push_back(Value::string(s.substr(start, i - start)));
      }
      allocated_ += chars.size() * (sizeof(Value) + sizeof(std::string));
      return std::make_shared<const std::vector<Value>>(std::move(chars));
    }
    case Value::Kind::Object:
      if (v.as_object().iterable())
        return std::make_shared<const std::vector<Value>>(v.as_object().take_items());
      [[fallthrough]];
    default:
      STRATA_THROW("'", type_name(v), "' object is not iterable");
  }
}

// ---- expressions ---------------------------------------------------------------------------

Value Interpreter::eval(const Expr& e, Scope& scope) {
  line_ = e.line;
  switch (e.kind) {
    case ExprKind::Const:
      return e.constant;
    case ExprKind::Name:
      return eval_name(e, scope);
    case ExprKind::List:
    case ExprKind::Tuple:
    case ExprKind::Dict:
      return eval_literal(e, scope);
    case ExprKind::GetAttr: {
      const Value obj = eval(*e.operands[0], scope);
      line_ = e.line;
      return get_attr(obj, e.name);
    }
    case ExprKind::GetItem: {
      const Value obj = eval(*e.operands[0], scope);
      const Value key = eval(*e.operands[1], scope);
      line_ = e.line;
      return get_item(obj, key);
    }
    case ExprKind::Slice:
      return eval_slice(e, scope);
    case ExprKind::Call:
      return eval_call(e, scope);
    case ExprKind::Filter:
      return eval_filter(e, scope, nullptr);
    case ExprKind::Test:
      return eval_test(e, scope);
    case ExprKind::Not:
      return Value::boolean(!truthy(eval(*e.operands[0], scope)));
    case ExprKind::Neg:
    case ExprKind::Pos:
      return unary_op(e.kind == ExprKind::Neg, eval(*e.operands[0], scope));
    case ExprKind::Binary: {
      const Value a = eval(*e.operands[0], scope);
      const Value b = eval(*e.operands[1], scope);
      line_ = e.line;
      return binary_op(*this, e.bin_op, a, b);
    }
    case ExprKind::Concat:
      return eval_concat(e, scope);
    case ExprKind::Compare:
      return eval_compare(e, scope);
    case ExprKind::And: {
      Value a = eval(*e.operands[0], scope);
      return truthy(a) ? eval(*e.operands[1], scope) : a;
    }
    case ExprKind::Or: {
      Value a = eval(*e.operands[0], scope);
      return truthy(a) ? a : eval(*e.operands[1], scope);
    }
    case ExprKind::CondExpr: {
      if (truthy(eval(*e.operands[0], scope))) return eval(*e.operands[1], scope);
      if (e.operands[2]) return eval(*e.operands[2], scope);
      return Value::undefined(concat("the inline if-expression on line ", e.line,
                                     " evaluated to false and no else section was defined."));
    }
  }
  return Value();
}

Value Interpreter::eval_name(const Expr& e, Scope& scope) {
  if (const Value* v = scope.lookup(e.name)) return *v;
  return Value::undefined("'" + e.name + "' is undefined");
}

Value Interpreter::eval_literal(const Expr& e, Scope& scope) {
  if (e.kind == ExprKind::Dict) {
    DictData d;
    for (size_t i = 0; i + 1 < e.operands.size(); i += 2) {
      Value k = eval(*e.operands[i], scope);
      Value v = eval(*e.operands[i + 1], scope);
      d.set(std::move(k), std::move(v));
    }
    return new_dict(std::move(d));
  }
  std::vector<Value> items;
  items.reserve(e.operands.size());
  for (const auto& op : e.operands) items.push_back(eval(*op, scope));
  return new_list(std::move(items), e.kind == ExprKind::Tuple);
}

Value Interpreter::eval_slice(const Expr& e, Scope& scope) {
  const Value obj = eval(*e.operands[0], scope);
  std::optional<int64_t> bounds[3];
  for (int i = 0; i < 3; ++i) {
    if (!e.operands[i + 1]) continue;
    const Value b = eval(*e.operands[i + 1], scope);
    if (b.is_none()) continue;
    if (!b.is_int() && !b.is_bool()) return Value::undefined("slice indices must be integers or None");
    bounds[i] = b.to_int();
  }
  line_ = e.line;
  if (obj.is_undefined()) throw Error(obj.undefined_message());
  if (!obj.is_list() && !obj.is_string())
    return Value::undefined(concat("'", type_name(obj), "' object is not subscriptable"));
  return slice_value(*this, obj, bounds[0], bounds[1], bounds[2]);
}

void Interpreter::eval_args(const Expr& e, size_t first, Scope& scope, CallArgs& out) {
  for (size_t i = first; i < e.operands.size(); ++i) out.args.push_back(eval(*e.operands[i], scope));
  if (e.dyn_args) {
    const auto extra = iterate(eval(*e.dyn_args, scope));
    out.args.insert(out.args.end(), extra->begin(), extra->end());
  }
  for (const auto& [key, expr] : e.kwargs) out.kwargs.emplace_back(key, eval(*expr, scope));
  if (e.dyn_kwargs) {
    const Value d = eval(*e.dyn_kwargs, scope);
    if (!d.is_dict()) STRATA_THROW("argument after ** must be a mapping, not ", type_name(d));
    for (const auto& [k, v] : d.as_dict().items()) {
      if (!k.is_string()) STRATA_THROW("keywords must be strings");
      out.kwargs.emplace_back(k.as_string(), v);
    }
  }
}

Value Interpreter::eval_call(const Expr& e, Scope& scope) {
  const Value callee = eval(*e.operands[0], scope);
  CallArgs args;
  eval_args(e, 1, scope, args);
  line_ = e.line;
  return call(callee, args);
}

Value Interpreter::eval_filter(const Expr& e, Scope& scope, const Value* placeholder) {
  Value input;
  if (!e.operands[0])
    input = placeholder ? *placeholder : Value();
  else if (e.operands[0]->kind == ExprKind::Filter)
    input = eval_filter(*e.operands[0], scope, placeholder);
  else
    input = eval(*e.operands[0], scope);
  CallArgs args;
  eval_args(e, 1, scope, args);
  line_ = e.line;
  return call_filter(e.name, input, args);
}

Value Interpreter::eval_test(const Expr& e, Scope& scope) {
  const Value input = eval(*e.operands[0], scope);
  CallArgs args;
  eval_args(e, 1, scope, args);
  line_ = e.line;
  return Value::boolean(call_test(e.name, input, args));
}

Value Interpreter::eval_compare(const Expr& e, Scope& scope) {
  Value left = eval(*e.operands[0], scope);
  for (size_t i = 0; i < e.compare_ops.size(); ++i) {
    Value right = eval(*e.operands[i + 1], scope);
    line_ = e.line;
    if (!compare_op(*this, e.compare_ops[i], left, right)) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Value Interpreter::eval_concat(const Expr& e, Scope& scope) {
  std::string out;
  for (const auto& op : e.operands) {
    const Value v = eval(*op, scope);
    const std::string piece = v.is_string() ? v.as_string() : str(v);
    check_string_size(out.size() + piece.size());
    out += piece;
  }
  line_ = e.line;
  return new_string(std::move(out));
}

}  // namespace strata::jinja
