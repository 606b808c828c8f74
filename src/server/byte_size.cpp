#include "server/byte_size.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/check.h"

namespace strata::server {
namespace {

struct Unit {
  const char* name;
  double factor;
};

constexpr Unit kUnits[] = {{"", 1.0},
                           {"b", 1.0},
                           {"k", 1024.0},
                           {"kib", 1024.0},
                           {"kb", 1e3},
                           {"m", 1048576.0},
                           {"mib", 1048576.0},
                           {"mb", 1e6},
                           {"g", 1073741824.0},
                           {"gib", 1073741824.0},
                           {"gb", 1e9},
                           {"t", 1099511627776.0},
                           {"tib", 1099511627776.0},
                           {"tb", 1e12}};

}  // namespace

size_t parse_byte_size(std::string_view text) {
  const std::string s(text);
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  const std::string number = s.substr(0, i);
  std::string unit;
  for (size_t j = i; j < s.size(); ++j) {
    if (s[j] == ' ') continue;
    unit += static_cast<char>(std::tolower(static_cast<unsigned char>(s[j])));
  }
  char* end = nullptr;
  const double value = number.empty() ? NAN : std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !std::isfinite(value))
    STRATA_THROW("invalid size '", s, "' (expected e.g. 512MiB, 2GiB or a number of bytes)");
  for (const Unit& u : kUnits) {
    if (unit != u.name) continue;
    const double bytes = std::floor(value * u.factor);
    if (bytes >= 18446744073709551615.0) STRATA_THROW("size '", s, "' is too large");
    return static_cast<size_t>(bytes);
  }
  STRATA_THROW("invalid size unit in '", s, "' (use B, KiB, MiB, GiB, TiB, or KB, MB, GB, TB)");
}

}  // namespace strata::server
