// libFuzzer target: the KV disk tier's file parser (kv/tier_file.h) over arbitrary bytes. The
// header is parsed, then the whole file is verified against the identity its own header claims
// (the deepest path: every check but the fingerprint/hash comparison runs on fuzzed data) and
// against a fixed one. Crashes, sanitizer reports and allocations driven by a claimed size are
// bugs; a file that verifies must re-encode to the same bytes.
//
// Random bytes never carry a valid CRC-32C, so on their own they stop at the header checksum
// (a 60-second run covered 10 edges). The first input byte therefore chooses what to repair in
// the rest, the candidate file: bit 0 the magic and version fields, bit 1 the header checksum,
// bit 2 the payload checksum, each written correctly for the fuzzed bytes around it. The checks
// behind them then run on fuzzed sizes, hashes and payloads; with no bit set the file is as given.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "kv/crc32c.h"
#include "kv/tier_file.h"

namespace {

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// Repairs the fields of `file` that `mode` names (see above).
void repair(std::vector<uint8_t>& file, uint8_t mode) {
  using namespace strata;
  if (file.size() < kTierHeaderBytes) return;
  uint8_t* h = file.data();
  if (mode & 1) {
    std::memcpy(h, "STRKVBLK", 8);
    put_u32(h + 8, 1);
    put_u32(h + 12, static_cast<uint32_t>(kTierHeaderBytes));
  }
  if (mode & 4) {
    uint64_t claimed = 0;
    for (int i = 0; i < 8; ++i) claimed |= uint64_t{h[80 + i]} << (8 * i);
    const size_t have = file.size() - kTierHeaderBytes;
    put_u32(h + 88, crc32c(h + kTierHeaderBytes, claimed < have ? static_cast<size_t>(claimed) : have));
  }
  if (mode & 2) put_u32(h + 92, crc32c(h, 92));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  if (size == 0) return 0;
  std::vector<uint8_t> file(data + 1, data + size);
  repair(file, data[0]);
  const uint8_t* f = file.data();
  const size_t n = file.size();
  TierFileHeader h;
  if (parse_tier_header(f, n, h) != TierFileStatus::Ok) return 0;
  const TierFileStatus st =
      verify_tier_file(f, n, h.fingerprint, h.hash, static_cast<size_t>(h.payload_bytes));
  if (st == TierFileStatus::Ok) {
    const auto again = encode_tier_file(h.fingerprint, h.hash, f + kTierHeaderBytes, h.payload_bytes);
    STRATA_CHECK(again.size() == n && std::memcmp(again.data(), f, n) == 0,
                 "a verified tier file does not re-encode to itself");
  }
  const BlockHash other{};
  (void)verify_tier_file(f, n, other, other, 64);
  return 0;
}
