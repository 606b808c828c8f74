#include "server/api_key.h"

#include <cctype>

namespace strata::server {

bool api_key_equals(std::string_view expected, std::string_view given) {
  if (expected.empty()) return false;
  // Every byte of `given` is compared (against the key repeated), and the differences are
  // OR-ed together: no early exit, no data-dependent branch.
  volatile unsigned char diff = static_cast<unsigned char>(expected.size() != given.size());
  for (size_t i = 0; i < given.size(); ++i)
    diff = diff | static_cast<unsigned char>(given[i] ^ expected[i % expected.size()]);
  return diff == 0;
}

std::string_view bearer_token(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size()) return {};
  for (size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return {};
  std::string_view rest = authorization.substr(kScheme.size());
  if (rest.front() != ' ' && rest.front() != '\t') return {};
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t')) rest.remove_suffix(1);
  return rest;
}

}  // namespace strata::server
