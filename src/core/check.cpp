#include "core/check.h"

#include <cstdio>
#include <cstdlib>

namespace strata {

void check_failed(const char* file, int line, const char* cond, const std::string& msg) {
  std::fprintf(stderr, "strata: internal error at %s:%d: check `%s` failed%s%s\n", file, line, cond,
               msg.empty() ? "" : ": ", msg.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace strata
