// The KV tier file format and its checksum: CRC-32C against the published check value, and a
// file that is damaged anywhere (every single byte flipped, every truncation), foreign or for
// another block is rejected.
#include <gtest/gtest.h>

#include <cstring>

#include "kv/crc32c.h"
#include "kv/prefix_hash.h"
#include "kv/tier_file.h"

namespace strata {
namespace {

BlockHash h(int v) {
  const int32_t t[1] = {v};
  return chain_block_hash(prefix_root_hash({"tier-test"}), t, 1);
}

std::vector<uint8_t> payload(size_t n) {
  std::vector<uint8_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(i * 37 + 11);
  return p;
}

TEST(Crc32c, MatchesTheCheckValueOfTheCastagnoliPolynomial) {
  // The standard check value of CRC-32C (RFC 3720 B.4's polynomial): crc("123456789").
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
  // 32 zero bytes: RFC 3720 B.4's first example, 0xAA36918A (bytes aa 36 91 8a little endian = 8a9136aa).
  const uint8_t zeros[32] = {};
  EXPECT_EQ(crc32c(zeros, 32), 0x8A9136AAu);
  // Continuation equals one pass.
  EXPECT_EQ(crc32c("456789", 6, crc32c("123", 3)), 0xE3069283u);
}

TEST(TierFile, RoundTripsAndVerifies) {
  const auto p = payload(200);
  const auto f = encode_tier_file(h(1), h(2), p.data(), p.size());
  ASSERT_EQ(f.size(), kTierHeaderBytes + p.size());
  EXPECT_EQ(std::memcmp(f.data(), "STRKVBLK", 8), 0);
  EXPECT_EQ(verify_tier_file(f.data(), f.size(), h(1), h(2), p.size()), TierFileStatus::Ok);
  EXPECT_EQ(std::memcmp(f.data() + kTierHeaderBytes, p.data(), p.size()), 0);
  TierFileHeader hd;
  ASSERT_EQ(parse_tier_header(f.data(), f.size(), hd), TierFileStatus::Ok);
  EXPECT_EQ(hd.fingerprint, h(1));
  EXPECT_EQ(hd.hash, h(2));
  EXPECT_EQ(hd.payload_bytes, p.size());
}

TEST(TierFile, ForeignModelAndOtherBlockAndOtherSizeAreRejected) {
  const auto p = payload(64);
  const auto f = encode_tier_file(h(1), h(2), p.data(), p.size());
  EXPECT_EQ(verify_tier_file(f.data(), f.size(), h(9), h(2), p.size()), TierFileStatus::ForeignModel);
  EXPECT_EQ(verify_tier_file(f.data(), f.size(), h(1), h(9), p.size()), TierFileStatus::WrongBlock);
  EXPECT_EQ(verify_tier_file(f.data(), f.size(), h(1), h(2), p.size() + 1), TierFileStatus::WrongSize);
  auto longer = f;
  longer.push_back(0);
  EXPECT_EQ(verify_tier_file(longer.data(), longer.size(), h(1), h(2), p.size()), TierFileStatus::WrongSize);
}

TEST(TierFile, EveryFlippedByteAndEveryTruncationIsRejected) {
  const auto p = payload(48);
  const auto f = encode_tier_file(h(3), h(4), p.data(), p.size());
  for (size_t i = 0; i < f.size(); ++i)
    for (uint8_t bit : {uint8_t{1}, uint8_t{0x80}}) {
      auto bad = f;
      bad[i] ^= bit;
      EXPECT_NE(verify_tier_file(bad.data(), bad.size(), h(3), h(4), p.size()), TierFileStatus::Ok) << i;
    }
  for (size_t n = 0; n < f.size(); ++n)
    EXPECT_NE(verify_tier_file(f.data(), n, h(3), h(4), p.size()), TierFileStatus::Ok) << n;
}

TEST(TierFile, HugePayloadClaimIsRejectedFromTheHeaderAlone) {
  const auto p = payload(8);
  auto f = encode_tier_file(h(1), h(2), p.data(), p.size());
  // Claim 2^40 payload bytes and fix the header checksum: the size bound still rejects it.
  const uint64_t huge = uint64_t{1} << 40;
  for (int i = 0; i < 8; ++i) f[80 + i] = static_cast<uint8_t>(huge >> (8 * i));
  const uint32_t c = crc32c(f.data(), 92);
  for (int i = 0; i < 4; ++i) f[92 + i] = static_cast<uint8_t>(c >> (8 * i));
  TierFileHeader hd;
  EXPECT_EQ(parse_tier_header(f.data(), f.size(), hd), TierFileStatus::WrongSize);
}

}  // namespace
}  // namespace strata
