// Recursive-descent parser for the Jinja subset chat templates use (Jinja2's grammar and
// operator precedence; see ast.h for the nodes).
#pragma once

#include <string_view>

#include "template/ast.h"
#include "template/template_limits.h"

namespace strata::jinja {

// Parses template source. Throws TemplateError (Syntax) with the line of the problem, also for
// unknown filters/tests, unsupported tags (include, import, extends, block) and nesting beyond
// limits.max_nesting.
TemplateAst parse_template(std::string_view source, const TemplateParseLimits& limits);

}  // namespace strata::jinja
