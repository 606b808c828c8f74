// Quoting of names read from untrusted files for use in one-line error messages.
#pragma once

#include <string>
#include <string_view>

namespace strata {

// `s` with control bytes (incl. newlines) escaped as \xNN and cut to `max_len` bytes (with "..."),
// so a hostile key or tensor name can neither break an error message onto several lines nor
// make it huge.
std::string escape_for_message(std::string_view s, size_t max_len = 80);

}  // namespace strata
