// libFuzzer target: the KV disk tier's file parser (kv/tier_file.h) over arbitrary bytes. The
// header is parsed, then the whole file is verified against the identity its own header claims
// (the deepest path: every check but the fingerprint/hash comparison runs on fuzzed data) and
// against a fixed one. Crashes, sanitizer reports and allocations driven by a claimed size are
// bugs; a file that verifies must re-encode to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/check.h"
#include "kv/tier_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  TierFileHeader h;
  if (parse_tier_header(data, size, h) != TierFileStatus::Ok) return 0;
  const TierFileStatus st =
      verify_tier_file(data, size, h.fingerprint, h.hash, static_cast<size_t>(h.payload_bytes));
  if (st == TierFileStatus::Ok) {
    const auto again = encode_tier_file(h.fingerprint, h.hash, data + kTierHeaderBytes, h.payload_bytes);
    STRATA_CHECK(again.size() == size && std::memcmp(again.data(), data, size) == 0,
                 "a verified tier file does not re-encode to itself");
  }
  const BlockHash other{};
  (void)verify_tier_file(data, size, other, other, 64);
  return 0;
}
