// Syntax tree of a parsed template. Built once by the parser, shared read-only by renders.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/value.h"

namespace strata::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind : uint8_t {
  Const,     // constant
  Name,      // name
  List,      // operands: items
  Tuple,     // operands: items
  Dict,      // operands: k0, v0, k1, v1, ...
  GetAttr,   // operands[0].name
  GetItem,   // operands[0][operands[1]]
  Slice,     // operands[0][operands[1]:operands[2]:operands[3]] (bounds may be null)
  Call,      // operands[0](operands[1..], kwargs, *dyn_args, **dyn_kwargs)
  Filter,    // operands[0] | name(operands[1..], kwargs); operands[0] null inside {% filter %}
  Test,      // operands[0] is name(operands[1..], kwargs)
  Not,       // not operands[0]
  Neg,       // -operands[0]
  Pos,       // +operands[0]
  Binary,    // operands[0] bin_op operands[1]
  Concat,    // operands joined with ~
  Compare,   // operands[0] compare_ops[0] operands[1] compare_ops[1] operands[2] ...
  And,       // operands[0] and operands[1]
  Or,        // operands[0] or operands[1]
  CondExpr,  // operands[1] if operands[0] else operands[2] (else may be null)
};

enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, FloorDiv, Mod, Pow };
enum class CompareOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

struct Expr {
  ExprKind kind = ExprKind::Const;
  int line = 0;
  Value constant;
  std::string name;
  BinaryOp bin_op = BinaryOp::Add;
  std::vector<ExprPtr> operands;
  std::vector<CompareOp> compare_ops;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  ExprPtr dyn_args, dyn_kwargs;
};

// Left side of set / for / with: a name, a tuple of targets, or namespace.attr.
struct Target {
  enum class Kind : uint8_t { Name, Tuple, NamespaceAttr };
  Kind kind = Kind::Name;
  std::string name;
  std::string attr;
  std::vector<Target> items;
};

struct MacroDef {
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // one per param, null when it has none
  Body body;
  // Jinja lets a macro take extra arguments only when its body mentions these names.
  bool uses_caller = false;
  bool uses_varargs = false;
  bool uses_kwargs = false;
  int line = 0;
};

enum class StmtKind : uint8_t {
  Text,         // text
  Print,        // {{ expr }} / {% print expr %}
  If,           // branches: (condition, body)..., condition null for else
  For,          // for target in expr [if condition] [recursive]: body [else: else_body]
  Set,          // set target = expr
  SetBlock,     // set target [| filter expr]: body
  Macro,        // macro
  CallBlock,    // call(macro params) expr: macro->body becomes caller()
  FilterBlock,  // filter expr: body
  With,         // with assignments: body
  Break,
  Continue,
  Scope,  // body in its own scope (HF's {% generation %})
};

struct Stmt {
  StmtKind kind = StmtKind::Text;
  int line = 0;
  std::string text;
  ExprPtr expr;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Target target;
  ExprPtr condition;
  Body body, else_body;
  bool recursive = false;
  std::shared_ptr<MacroDef> macro;
  std::vector<std::pair<Target, ExprPtr>> assignments;
};

struct TemplateAst {
  Body body;
};

}  // namespace strata::jinja
