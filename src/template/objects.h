// The engine's Object kinds: namespace(), loop, macros, builtin functions, generators.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "template/ast.h"
#include "template/value.h"

namespace strata::jinja {

class Scope;

// namespace(...): the one mutable mapping templates can write to (`set ns.attr = v`).
// Sandbox rule: its attributes hold plain data only (no objects), so values never form
// reference cycles or unbounded chains.
class NamespaceObject : public Object {
 public:
  std::string type_name() const override { return "Namespace"; }
  Value get_attr(std::string_view name) override;
  std::string repr() const override;
  // Throws strata::Error when `v` holds an object.
  void set(const std::string& name, Value v);

 private:
  DictData attrs_;
};

// A builtin function or bound method.
class NativeFunction : public Object {
 public:
  using Fn = std::function<Value(Interpreter&, CallArgs&)>;
  NativeFunction(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::string type_name() const override { return "builtin_function_or_method"; }
  bool callable() const override { return true; }
  Value call(Interpreter& in, CallArgs& args) override { return fn_(in, args); }
  std::string repr() const override { return "<built-in function " + name_ + ">"; }

 private:
  std::string name_;
  Fn fn_;
};

Value native_function(std::string name, NativeFunction::Fn fn);

// A macro (or the caller() of a call block) bound to the scope it was defined in.
class MacroObject : public Object {
 public:
  MacroObject(const MacroDef* def, Scope* closure) : def_(def), closure_(closure) {}
  std::string type_name() const override { return "Macro"; }
  bool callable() const override { return true; }
  Value call(Interpreter& in, CallArgs& args) override;
  std::string repr() const override { return "<Macro '" + def_->name + "'>"; }
  Value get_attr(std::string_view name) override;

 private:
  const MacroDef* def_;
  Scope* closure_;  // kept alive by the interpreter (pinned scopes)
};

// What filters such as map/select/items return in Python: a one-shot iterator. It is always
// truthy, has no len() and can be consumed once, exactly like the generator it stands for.
class IteratorObject : public Object {
 public:
  IteratorObject(std::vector<Value> items, std::string type)
      : items_(std::move(items)), type_(std::move(type)) {}
  std::string type_name() const override { return type_; }
  std::string repr() const override { return "<" + type_ + " object>"; }
  bool iterable() const override { return true; }
  std::vector<Value> take_items() override;

 private:
  std::vector<Value> items_;
  size_t pos_ = 0;
  std::string type_;
};

// The `loop` variable of a for loop.
class LoopObject : public Object {
 public:
  LoopObject(std::shared_ptr<const std::vector<Value>> items, int depth, const Stmt* stmt, Scope* scope)
      : items_(std::move(items)), depth_(depth), stmt_(stmt), scope_(scope) {}
  std::string type_name() const override { return "LoopContext"; }
  Value get_attr(std::string_view name) override;
  bool callable() const override { return true; }
  // loop(children) of a recursive loop.
  Value call(Interpreter& in, CallArgs& args) override;
  std::string repr() const override;
  void set_index(size_t i) { index_ = i; }

 private:
  std::shared_ptr<const std::vector<Value>> items_;
  size_t index_ = 0;
  int depth_;
  const Stmt* stmt_;
  Scope* scope_;
  std::shared_ptr<Value> last_changed_ = std::make_shared<Value>();
};

// cycler(*items) and joiner(sep).
class CyclerObject : public Object, public std::enable_shared_from_this<CyclerObject> {
 public:
  explicit CyclerObject(std::vector<Value> items) : items_(std::move(items)) {}
  std::string type_name() const override { return "Cycler"; }
  Value get_attr(std::string_view name) override;

 private:
  std::vector<Value> items_;
  size_t pos_ = 0;
};

class JoinerObject : public Object {
 public:
  explicit JoinerObject(std::string sep) : sep_(std::move(sep)) {}
  std::string type_name() const override { return "Joiner"; }
  bool callable() const override { return true; }
  Value call(Interpreter& in, CallArgs& args) override;

 private:
  std::string sep_;
  bool used_ = false;
};

}  // namespace strata::jinja
