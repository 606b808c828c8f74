// Sizes given on the command line: "512MiB", "2GiB", "1.5G", "1000000".
#pragma once

#include <cstddef>
#include <string_view>

namespace strata::server {

// A non-negative number with an optional unit: B; K, KiB, M, MiB, G, GiB, T, TiB (powers of
// 1024); KB, MB, GB, TB (powers of 1000). Case-insensitive. Throws strata::Error otherwise or
// when the result does not fit in size_t.
size_t parse_byte_size(std::string_view text);

}  // namespace strata::server
