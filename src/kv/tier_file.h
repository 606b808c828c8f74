// The file format of one KV block in the disk tier.
//
//   offset size  field
//        0    8  magic "STRKVBLK"
//        8    4  version (1), little endian like every integer below
//       12    4  header bytes (kTierHeaderBytes)
//       16   32  fingerprint: model identity + KV type and layout (engine/kv_fingerprint.h)
//       48   32  block hash: the prefix-hash chain up to and including this block
//       80    8  payload bytes (one block over all layers, K then V per layer)
//       88    4  CRC-32C of the payload
//       92    4  CRC-32C of bytes [0, 92)
//       96    n  payload
// A file is trusted only when every field verifies against what the reader expects; anything
// else (another model, another -ctk, a truncated or flipped byte) is rejected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kv/block_pool.h"

namespace strata {

inline constexpr size_t kTierHeaderBytes = 96;
// A block of the largest geometry the engine allows stays far below this; a header claiming
// more is rejected before anything is allocated.
inline constexpr uint64_t kTierMaxPayloadBytes = uint64_t{1} << 32;

struct TierFileHeader {
  BlockHash fingerprint{};
  BlockHash hash{};
  uint64_t payload_bytes = 0;
  uint32_t payload_crc = 0;
};

enum class TierFileStatus {
  Ok,
  Truncated,
  BadMagic,
  BadVersion,
  BadHeaderChecksum,
  BadPayloadChecksum,
  ForeignModel,
  WrongBlock,
  WrongSize
};

const char* tier_file_status_name(TierFileStatus s);

// The whole file (header + payload) for a block.
std::vector<uint8_t> encode_tier_file(const BlockHash& fingerprint, const BlockHash& hash,
                                      const uint8_t* payload, size_t n);

// Parses and checks the header only (the first kTierHeaderBytes of `data`).
TierFileStatus parse_tier_header(const uint8_t* data, size_t n, TierFileHeader& out);

// Checks a whole file against what the reader expects: its fingerprint, block hash and payload
// size, the header and payload checksums, and that nothing follows the payload. On Ok the
// payload is at data + kTierHeaderBytes.
TierFileStatus verify_tier_file(const uint8_t* data, size_t n, const BlockHash& fingerprint,
                                const BlockHash& hash, size_t payload_bytes);

}  // namespace strata
