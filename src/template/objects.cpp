#include "template/objects.h"

#include "template/interpreter.h"

namespace strata::jinja {

Value native_function(std::string name, NativeFunction::Fn fn) {
  return Value::object(std::make_shared<NativeFunction>(std::move(name), std::move(fn)));
}

// ---- NamespaceObject -----------------------------------------------------------------------

Value NamespaceObject::get_attr(std::string_view name) {
  if (const Value* v = attrs_.find(name)) return *v;
  return Value::undefined(concat("'Namespace' object has no attribute '", name, "'"));
}

std::string NamespaceObject::repr() const {
  return "<Namespace " + to_repr(Value::dict(attrs_), 1u << 20) + ">";
}

void NamespaceObject::set(const std::string& name, Value v) {
  if (v.has_objects())
    STRATA_THROW("namespace attributes can only hold plain data (strings, numbers, lists, dicts), not ",
                 jinja::type_name(v));
  attrs_.set(Value::string(name), std::move(v));
}

// ---- MacroObject ---------------------------------------------------------------------------

Value MacroObject::call(Interpreter& in, CallArgs& args) {
  return in.call_macro(*def_, closure_, args);
}

Value MacroObject::get_attr(std::string_view name) {
  if (name == "name") return Value::string(def_->name);
  if (name == "arguments") {
    std::vector<Value> params;
    for (const auto& p : def_->params) params.push_back(Value::string(p));
    return Value::list(std::move(params), true);
  }
  if (name == "catch_kwargs") return Value::boolean(def_->uses_kwargs);
  if (name == "catch_varargs") return Value::boolean(def_->uses_varargs);
  if (name == "caller") return Value::boolean(def_->uses_caller);
  return Object::get_attr(name);
}

// ---- IteratorObject ------------------------------------------------------------------------

std::vector<Value> IteratorObject::take_items() {
  std::vector<Value> rest(items_.begin() + static_cast<std::ptrdiff_t>(pos_), items_.end());
  pos_ = items_.size();
  return rest;
}

// ---- LoopObject ----------------------------------------------------------------------------

Value LoopObject::get_attr(std::string_view name) {
  const auto n = static_cast<int64_t>(items_->size());
  const auto i = static_cast<int64_t>(index_);
  if (name == "index") return Value::integer(i + 1);
  if (name == "index0") return Value::integer(i);
  if (name == "revindex") return Value::integer(n - i);
  if (name == "revindex0") return Value::integer(n - i - 1);
  if (name == "first") return Value::boolean(i == 0);
  if (name == "last") return Value::boolean(i == n - 1);
  if (name == "length") return Value::integer(n);
  if (name == "depth") return Value::integer(depth_);
  if (name == "depth0") return Value::integer(depth_ - 1);
  if (name == "previtem")
    return i > 0 ? (*items_)[index_ - 1] : Value::undefined("there is no previous item");
  if (name == "nextitem")
    return i + 1 < n ? (*items_)[index_ + 1] : Value::undefined("there is no next item");
  if (name == "cycle") {
    return native_function("cycle", [i](Interpreter&, CallArgs& args) {
      if (args.args.empty()) STRATA_THROW("no items for cycling given");
      return args.args[static_cast<size_t>(i) % args.args.size()];
    });
  }
  if (name == "changed") {
    return native_function("changed", [state = last_changed_](Interpreter& in, CallArgs& args) {
      Value current = in.new_list(args.args, true);
      if (!state->is_undefined() && py_equal(*state, current)) return Value::boolean(false);
      *state = std::move(current);
      return Value::boolean(true);
    });
  }
  return Object::get_attr(name);
}

Value LoopObject::call(Interpreter& in, CallArgs& args) {
  if (args.args.size() != 1 || !args.kwargs.empty()) STRATA_THROW("loop() takes exactly one argument");
  return in.call_loop(*stmt_, scope_, args.args[0], depth_ + 1);
}

std::string LoopObject::repr() const {
  return concat("<LoopContext ", index_ + 1, "/", items_->size(), ">");
}

// ---- CyclerObject / JoinerObject -----------------------------------------------------------

Value CyclerObject::get_attr(std::string_view name) {
  if (items_.empty()) STRATA_THROW("at least one item has to be provided");
  if (name == "current") return items_[pos_];
  // Bound methods hold the cycler through a shared pointer, never a raw `this`.
  auto self = shared_from_this();
  if (name == "next") {
    return native_function("next", [self](Interpreter&, CallArgs&) {
      Value v = self->items_[self->pos_];
      self->pos_ = (self->pos_ + 1) % self->items_.size();
      return v;
    });
  }
  if (name == "reset") {
    return native_function("reset", [self](Interpreter&, CallArgs&) {
      self->pos_ = 0;
      return Value::none();
    });
  }
  return Object::get_attr(name);
}

Value JoinerObject::call(Interpreter&, CallArgs&) {
  if (!used_) {
    used_ = true;
    return Value::string("");
  }
  return Value::string(sep_);
}

}  // namespace strata::jinja
