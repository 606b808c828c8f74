// The error a chat template raises at parse or render time.
#pragma once

#include <string>

#include "core/check.h"

namespace strata {

// A strata::Error carrying where in the template it happened. what() reads
// "chat template, line N: <message>".
class TemplateError : public Error {
 public:
  enum class Kind {
    Syntax,        // the template does not parse
    Runtime,       // an operation failed while rendering (type error, undefined value, ...)
    Raised,        // the template called raise_exception(message)
    LimitExceeded  // a sandbox limit (depth, iterations, output size, time, memory) was hit
  };

  TemplateError(Kind kind, int line, std::string message)
      : Error(line > 0 ? concat("chat template, line ", line, ": ", message)
                       : concat("chat template: ", message)),
        kind_(kind),
        line_(line),
        message_(std::move(message)) {}

  Kind kind() const { return kind_; }
  int line() const { return line_; }                       // 1-based; 0 when unknown
  const std::string& message() const { return message_; }  // without the location prefix

 private:
  Kind kind_;
  int line_;
  std::string message_;
};

}  // namespace strata
