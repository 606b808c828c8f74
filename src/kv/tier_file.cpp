#include "kv/tier_file.h"

#include <cstring>

#include "kv/crc32c.h"

namespace strata {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'K', 'V', 'B', 'L', 'K'};
constexpr uint32_t kVersion = 1;

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

const char* tier_file_status_name(TierFileStatus s) {
  switch (s) {
    case TierFileStatus::Ok:
      return "ok";
    case TierFileStatus::Truncated:
      return "truncated";
    case TierFileStatus::BadMagic:
      return "not a KV tier file";
    case TierFileStatus::BadVersion:
      return "unknown version";
    case TierFileStatus::BadHeaderChecksum:
      return "header checksum mismatch";
    case TierFileStatus::BadPayloadChecksum:
      return "payload checksum mismatch";
    case TierFileStatus::ForeignModel:
      return "another model or KV layout";
    case TierFileStatus::WrongBlock:
      return "another block";
    case TierFileStatus::WrongSize:
      return "wrong block size";
  }
  return "?";
}

std::vector<uint8_t> encode_tier_file(const BlockHash& fingerprint, const BlockHash& hash,
                                      const uint8_t* payload, size_t n) {
  std::vector<uint8_t> f(kTierHeaderBytes + n);
  uint8_t* h = f.data();
  std::memcpy(h, kMagic, 8);
  put_u32(h + 8, kVersion);
  put_u32(h + 12, static_cast<uint32_t>(kTierHeaderBytes));
  std::memcpy(h + 16, fingerprint.data(), 32);
  std::memcpy(h + 48, hash.data(), 32);
  put_u64(h + 80, n);
  put_u32(h + 88, crc32c(payload, n));
  put_u32(h + 92, crc32c(h, 92));
  if (n > 0) std::memcpy(h + kTierHeaderBytes, payload, n);
  return f;
}

TierFileStatus parse_tier_header(const uint8_t* data, size_t n, TierFileHeader& out) {
  if (n < kTierHeaderBytes) return TierFileStatus::Truncated;
  if (std::memcmp(data, kMagic, 8) != 0) return TierFileStatus::BadMagic;
  if (crc32c(data, 92) != get_u32(data + 92)) return TierFileStatus::BadHeaderChecksum;
  if (get_u32(data + 8) != kVersion || get_u32(data + 12) != kTierHeaderBytes)
    return TierFileStatus::BadVersion;
  std::memcpy(out.fingerprint.data(), data + 16, 32);
  std::memcpy(out.hash.data(), data + 48, 32);
  out.payload_bytes = get_u64(data + 80);
  out.payload_crc = get_u32(data + 88);
  if (out.payload_bytes > kTierMaxPayloadBytes) return TierFileStatus::WrongSize;
  return TierFileStatus::Ok;
}

TierFileStatus verify_tier_file(const uint8_t* data, size_t n, const BlockHash& fingerprint,
                                const BlockHash& hash, size_t payload_bytes) {
  TierFileHeader h;
  const TierFileStatus st = parse_tier_header(data, n, h);
  if (st != TierFileStatus::Ok) return st;
  if (h.fingerprint != fingerprint) return TierFileStatus::ForeignModel;
  if (h.hash != hash) return TierFileStatus::WrongBlock;
  if (h.payload_bytes != payload_bytes) return TierFileStatus::WrongSize;
  if (n - kTierHeaderBytes < payload_bytes) return TierFileStatus::Truncated;
  if (n - kTierHeaderBytes > payload_bytes) return TierFileStatus::WrongSize;
  if (crc32c(data + kTierHeaderBytes, payload_bytes) != h.payload_crc)
    return TierFileStatus::BadPayloadChecksum;
  return TierFileStatus::Ok;
}

}  // namespace strata
