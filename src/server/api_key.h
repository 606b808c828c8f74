// API-key authentication: "Authorization: Bearer KEY", compared in constant time.
#pragma once

#include <string_view>

namespace strata::server {

// True when `given` equals `expected` (non-empty). The time taken depends on the length of
// `given` only, never on how much of it matches, so the key cannot be guessed byte by byte.
bool api_key_equals(std::string_view expected, std::string_view given);

// The token of an "Authorization: Bearer TOKEN" header value ("" when the scheme is not Bearer).
std::string_view bearer_token(std::string_view authorization);

}  // namespace strata::server
