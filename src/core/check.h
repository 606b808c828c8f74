// Invariant checks and the recoverable error type.
//
// STRATA_CHECK guards programmer errors (broken invariants): it prints file:line and aborts.
// strata::Error is for bad input (files, flags, requests): thrown inside the engine and turned
// into one clean message (CLI) or an OpenAI-style error (server) at the boundary.
#pragma once

#include <stdexcept>
#include <string>

namespace strata {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void check_failed(const char* file, int line, const char* cond, const std::string& msg);

// Builds a message from any streamable parts: fail("bad value ", x).
template <typename... Args>
std::string concat(const Args&... args);

}  // namespace strata

#include <sstream>

namespace strata {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream ss;
  (ss << ... << args);
  return ss.str();
}
}  // namespace strata

#define STRATA_CHECK(cond, ...)                                                        \
  do {                                                                                 \
    if (!(cond)) [[unlikely]]                                                          \
      ::strata::check_failed(__FILE__, __LINE__, #cond, ::strata::concat("" __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)

// Throws strata::Error with the concatenated message.
#define STRATA_THROW(...) throw ::strata::Error(::strata::concat(__VA_ARGS__))
