// Base64 (RFC 4648, standard alphabet, '=' padding): how /v1/embeddings sends vectors with
// encoding_format "base64" (the bytes of little-endian float32 values, as the openai clients
// decode them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace strata::server {

std::string base64_encode(const uint8_t* data, size_t n);

}  // namespace strata::server
