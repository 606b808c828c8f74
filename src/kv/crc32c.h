// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of KV tier files.
// Table-driven, byte at a time: a tier file is read once per restore, so a few hundred MB/s is
// far below the cost of the disk read it guards.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata {

// CRC-32C of `n` bytes, continuing from `crc` (0 for a fresh checksum).
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);

}  // namespace strata
