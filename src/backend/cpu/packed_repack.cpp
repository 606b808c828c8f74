// Conversion of legacy quantized rows into the interleaved layout of packed_kernels.h.
#include <cstring>

#include "backend/cpu/packed_kernels.h"
#include "backend/cpu/packed_kind.h"
#include "core/check.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace strata::cpu {
namespace {

constexpr size_t kScalesBytes = kPackRows * sizeof(fp16_t);  // one fp16 per row
constexpr size_t kChunkBytes = kPackRows * 4;                // 4 bytes per row

// MXFP4's scale 2^(e - 128) as an fp16, where it has one (e in 104..143: 2^-24 .. 2^15).
bool mxfp4_scale_fp16(uint8_t e, fp16_t* out) {
  const int k = int{e} - 128;
  if (k < -24 || k > 15) return false;
  *out = static_cast<fp16_t>(k >= -14 ? (k + 15) << 10 : 1 << (k + 24));  // normal : subnormal
  return true;
}

// The parts of one source block, whatever its type.
struct SourceBlock {
  fp16_t d = 0, m = 0;
  const uint8_t* qs = nullptr;  // 16 bytes of nibbles, or 32 int8 for Q8_0
  uint32_t qh = 0;
};

SourceBlock read_block(TensorType type, const uint8_t* p) {
  SourceBlock s;
  switch (type) {
    case TensorType::Q4_0: {
      const auto* b = reinterpret_cast<const BlockQ4_0*>(p);
      s.d = b->d, s.qs = b->qs;
      break;
    }
    case TensorType::IQ4_NL: {  // Q4_0's layout; only the meaning of a nibble differs
      const auto* b = reinterpret_cast<const BlockIQ4_NL*>(p);
      s.d = b->d, s.qs = b->qs;
      break;
    }
    case TensorType::Q4_1: {
      const auto* b = reinterpret_cast<const BlockQ4_1*>(p);
      s.d = b->d, s.m = b->m, s.qs = b->qs;
      break;
    }
    case TensorType::Q5_0: {
      const auto* b = reinterpret_cast<const BlockQ5_0*>(p);
      s.d = b->d, s.qs = b->qs;
      std::memcpy(&s.qh, b->qh, 4);
      break;
    }
    case TensorType::Q5_1: {
      const auto* b = reinterpret_cast<const BlockQ5_1*>(p);
      s.d = b->d, s.m = b->m, s.qs = b->qs;
      std::memcpy(&s.qh, b->qh, 4);
      break;
    }
    case TensorType::Q8_0: {
      const auto* b = reinterpret_cast<const BlockQ8_0*>(p);
      s.d = b->d, s.qs = reinterpret_cast<const uint8_t*>(b->qs);
      break;
    }
    case TensorType::MXFP4: {  // IQ4_NL's layout with MXFP4's table; the scale as an exact fp16
      const auto* b = reinterpret_cast<const BlockMXFP4*>(p);
      STRATA_CHECK(mxfp4_scale_fp16(b->e, &s.d), "MXFP4 scale exponent ", int{b->e}, " has no fp16 form");
      s.qs = b->qs;
      break;
    }
    default:
      STRATA_CHECK(false, "type ", type_name(type), " has no interleaved layout");
  }
  return s;
}

bool has_min(TensorType t) {
  return t == TensorType::Q4_1 || t == TensorType::Q5_1;
}
bool has_qh(TensorType t) {
  return t == TensorType::Q5_0 || t == TensorType::Q5_1;
}

// Writes row r's share of one packed block at dst.
void put_row(TensorType type, const SourceBlock& s, int r, uint8_t* dst) {
  std::memcpy(dst + r * sizeof(fp16_t), &s.d, sizeof(fp16_t));
  uint8_t* qs = dst + kScalesBytes;
  if (has_min(type)) {
    std::memcpy(qs + r * sizeof(fp16_t), &s.m, sizeof(fp16_t));
    qs += kScalesBytes;
  }
  const int n_chunks = type == TensorType::Q8_0 ? 8 : 4;
  for (int k = 0; k < n_chunks; ++k)
    for (int i = 0; i < 4; ++i) {
      const uint8_t q = s.qs[4 * k + i];
      qs[k * kChunkBytes + 4 * r + i] = type == TensorType::Q8_0 ? static_cast<uint8_t>(q ^ 0x80u) : q;
    }
  if (has_qh(type)) {
    uint8_t* masks = qs + 4 * kChunkBytes;  // 8 little-endian u64
    for (int k = 0; k < 8; ++k)
      for (int i = 0; i < 4; ++i)
        if ((s.qh >> (4 * k + i)) & 1u) {
          const int bit = 4 * r + i;
          masks[k * 8 + bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
        }
  }
}

// The walk every super-block kind shares: group g's n_super packed super-blocks of kind K are
// zeroed, then for each real row r and super-block s its fp16 d goes to d[r] and
// put(source block, r, packed super-block) writes the rest of the row's share.
template <class Block, packed::Kind K, class Put>
void repack_super_group(const uint8_t* src, size_t src_row_stride, int64_t n_out, int64_t g, int64_t n_super,
                        uint8_t* dst, Put&& put) {
  constexpr size_t kBytes = packed::kBlockBytes<K>;
  std::memset(dst, 0, kBytes * static_cast<size_t>(n_super));
  for (int r = 0; r < kPackRows; ++r) {
    const int64_t row = g * kPackRows + r;
    if (row >= n_out) break;
    const auto* blocks = reinterpret_cast<const Block*>(src + static_cast<size_t>(row) * src_row_stride);
    for (int64_t s = 0; s < n_super; ++s) {
      uint8_t* out = dst + static_cast<size_t>(s) * kBytes;
      std::memcpy(out + r * sizeof(fp16_t), &blocks[s].d, sizeof(fp16_t));
      put(blocks[s], r, out);
    }
  }
}

// Sub-block j's quants in a packed super-block of kind K.
template <packed::Kind K>
uint8_t* sub_block_quants(uint8_t* out, int j) {
  return out + packed::kQsOffset<K> + packed::kSubBlockBytes<K> * static_cast<size_t>(j);
}

// Q4_K and Q5_K (Block = BlockQ4_K / BlockQ5_K), row r of one super-block. Element e of source
// sub-block j is nibble (j odd: high) of qs[32 (j / 2) + e]; in the packed chunk layout it is
// byte 4 (e % 16 / 4) * 16 + 4 r + e % 4 of the sub-block's quants, low nibble for e < 16. Q5_K's
// fifth bit (bit j of qh[e]) goes to Q5_0's masks after them.
template <class Block, packed::Kind K>
void put_k_scale_min_row(const Block& b, int r, uint8_t* out) {
  std::memcpy(out + packed::kQ4kDminOffset + r * sizeof(fp16_t), &b.dmin, sizeof(fp16_t));
  for (int j = 0; j < 8; ++j) {
    unpack_k4_scale_min(b.scales, j, out + packed::kQ4kScOffset + 16 * j + r,
                        out + packed::kQ4kMOffset + 16 * j + r);
    uint8_t* qs = sub_block_quants<K>(out, j);
    for (int e = 0; e < 32; ++e) {
      const uint8_t byte = b.qs[32 * (j / 2) + e];
      const uint8_t q = (j % 2 ? byte >> 4 : byte) & 0x0f;
      uint8_t& to = qs[(e % 16 / 4) * kChunkBytes + 4 * r + e % 4];
      to = static_cast<uint8_t>(to | (e < 16 ? q : q << 4));
      if constexpr (packed::kHasQh<K>) {
        if ((b.qh[e] >> j) & 1) {  // mask e / 4, bit 4 r + e % 4 (packed_kernels.h)
          const int bit = 4 * r + e % 4;
          qs[4 * kChunkBytes + (e / 4) * 8 + bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
        }
      }
    }
  }
}

// IQ4_XS, row r of one super-block. Sub-block j's 16 source bytes are an IQ4_NL block's quants;
// its scale is stored as the signed 6-bit value minus 32.
void put_iq4_xs_row(const BlockIQ4_XS& b, int r, uint8_t* out) {
  for (int j = 0; j < 8; ++j) {
    out[packed::kIq4xsScOffset + 16 * j + r] =
        static_cast<uint8_t>(static_cast<int8_t>(iq4_xs_scale(b.scales_h, b.scales_l, j)));
    uint8_t* qs = sub_block_quants<packed::Kind::IQ4_XS>(out, j);
    for (int k = 0; k < 4; ++k)
      for (int i = 0; i < 4; ++i) qs[k * kChunkBytes + 4 * r + i] = b.qs[16 * j + 4 * k + i];
  }
}

// Q6_K: quant u (0..63) of element e (0..255) of a source super-block (GGUF's Q6_K order: per
// 128 elements, four quarters of 32 sharing each qh byte).
uint8_t q6_k_quant(const BlockQ6_K& b, int e) {
  const int n = e / 128, quarter = e % 128 / 32, l = e % 32;
  const uint8_t lo = b.ql[64 * n + l + 32 * (quarter % 2)];
  const int low = quarter < 2 ? lo & 0x0f : lo >> 4;
  const int high = (b.qh[32 * n + l] >> (2 * quarter)) & 3;
  return static_cast<uint8_t>(low | high << 4);
}

// Q6_K, row r of one super-block: the 16 half scales, then per sub-block the low nibbles in
// Q4_0's layout and the high 2 bits in two planes (packed_kernels.h).
void put_q6_k_row(const BlockQ6_K& b, int r, uint8_t* out) {
  for (int h = 0; h < 16; ++h) out[packed::kQ6kScOffset + 16 * h + r] = static_cast<uint8_t>(b.scales[h]);
  for (int j = 0; j < 8; ++j) {
    uint8_t* ql = sub_block_quants<packed::Kind::Q6_K>(out, j);
    uint8_t* qh = ql + packed::kQ6kQhOffset;
    for (int e = 0; e < 32; ++e) {
      const uint8_t u = q6_k_quant(b, 32 * j + e);
      const int k = e % 16 / 4, byte = 4 * r + e % 4;
      ql[k * kChunkBytes + byte] |= static_cast<uint8_t>(e < 16 ? (u & 0x0f) : (u & 0x0f) << 4);
      qh[(e / 16) * kChunkBytes + byte] |= static_cast<uint8_t>((u >> 4) << (2 * k));
    }
  }
}

// Q3_K and Q2_K: the low 2 bits of element e (0..255) of a source super-block (GGUF's order: per
// 128 elements, four quarters of 32 sharing each qs byte).
int k_low2(const uint8_t* qs, int e) {
  const int n = e / 128, quarter = e % 128 / 32, l = e % 32;
  return (qs[32 * n + l] >> (2 * quarter)) & 3;
}

// Element e (0..31) of row r of a Q3_K / Q2_K sub-block: its low 2 bits into the lo planes
// (packed_kernels.h).
void put_low2(uint8_t* lo, int r, int e, int low2) {
  const int k = e % 16 / 4;
  lo[(e / 16) * kChunkBytes + 4 * r + e % 4] |= static_cast<uint8_t>(low2 << (2 * k));
}

// Q3_K, row r of one super-block: the 16 signed half scales, then per sub-block the 2-bit and
// 1-bit planes.
void put_q3_k_row(const BlockQ3_K& b, int r, uint8_t* out) {
  int8_t sc[16];
  unpack_q3_k_scales(b.scales, sc);
  for (int h = 0; h < 16; ++h) out[packed::kQ3kScOffset + 16 * h + r] = static_cast<uint8_t>(sc[h]);
  for (int j = 0; j < 8; ++j) {
    uint8_t* lo = sub_block_quants<packed::Kind::Q3_K>(out, j);
    uint8_t* hi = lo + packed::kQ3kHiOffset;
    for (int e = 0; e < 32; ++e) {
      const int src_e = 32 * j + e;
      put_low2(lo, r, e, k_low2(b.qs, src_e));
      const int bit = (b.hmask[src_e % 32] >> (src_e / 32)) & 1;
      hi[4 * r + e % 4] |= static_cast<uint8_t>(bit << (4 * (e / 16) + e % 16 / 4));
    }
  }
}

// Q2_K, row r of one super-block: dmin, the 16 scale | min << 4 bytes, then the 2-bit planes.
void put_q2_k_row(const BlockQ2_K& b, int r, uint8_t* out) {
  std::memcpy(out + packed::kQ2kDminOffset + r * sizeof(fp16_t), &b.dmin, sizeof(fp16_t));
  for (int h = 0; h < 16; ++h) out[packed::kQ2kScOffset + 16 * h + r] = b.scales[h];
  for (int j = 0; j < 8; ++j) {
    uint8_t* lo = sub_block_quants<packed::Kind::Q2_K>(out, j);
    for (int e = 0; e < 32; ++e) put_low2(lo, r, e, k_low2(b.qs, 32 * j + e));
  }
}

// The super-block kinds: group g of type's rows (nb 32-column blocks, a multiple of 8).
void repack_super_group(TensorType type, const uint8_t* src, size_t src_row_stride, int64_t n_out, int64_t g,
                        int64_t nb, uint8_t* dst) {
  using packed::Kind;
  STRATA_CHECK(nb % 8 == 0);
  const int64_t n = nb / 8;
  switch (type) {
    case TensorType::Q4_K:
      return repack_super_group<BlockQ4_K, Kind::Q4_K>(src, src_row_stride, n_out, g, n, dst,
                                                       put_k_scale_min_row<BlockQ4_K, Kind::Q4_K>);
    case TensorType::Q5_K:
      return repack_super_group<BlockQ5_K, Kind::Q5_K>(src, src_row_stride, n_out, g, n, dst,
                                                       put_k_scale_min_row<BlockQ5_K, Kind::Q5_K>);
    case TensorType::IQ4_XS:
      return repack_super_group<BlockIQ4_XS, Kind::IQ4_XS>(src, src_row_stride, n_out, g, n, dst,
                                                           put_iq4_xs_row);
    case TensorType::Q6_K:
      return repack_super_group<BlockQ6_K, Kind::Q6_K>(src, src_row_stride, n_out, g, n, dst, put_q6_k_row);
    case TensorType::Q3_K:
      return repack_super_group<BlockQ3_K, Kind::Q3_K>(src, src_row_stride, n_out, g, n, dst, put_q3_k_row);
    case TensorType::Q2_K:
      return repack_super_group<BlockQ2_K, Kind::Q2_K>(src, src_row_stride, n_out, g, n, dst, put_q2_k_row);
    default:
      STRATA_CHECK(false, "type ", type_name(type), " has no super-block layout");
  }
}

bool is_super_type(TensorType type) {
  return type == TensorType::Q4_K || type == TensorType::Q5_K || type == TensorType::IQ4_XS ||
         type == TensorType::Q6_K || type == TensorType::Q3_K || type == TensorType::Q2_K;
}

}  // namespace

bool packable_type(TensorType type) {
  switch (type) {
    case TensorType::Q4_0:
    case TensorType::IQ4_NL:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::Q8_0:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::IQ4_XS:
    case TensorType::Q6_K:
    case TensorType::Q3_K:
    case TensorType::Q2_K:
    case TensorType::MXFP4:
      return true;
    default:
      return false;
  }
}

size_t packed_block_bytes(TensorType type) {
  STRATA_CHECK(packable_type(type), "type ", type_name(type), " has no interleaved layout");
  size_t bytes = kPackRows * type_traits(type).block_bytes;  // the legacy kinds: 16 source blocks
  if (type == TensorType::MXFP4) bytes = packed::kBlockBytes<packed::Kind::MXFP4>;  // fp16 scales
  if (is_super_type(type))
    packed::with_any_kind(type, [&](auto kind) { bytes = packed::kBlockBytes<decltype(kind)::value> / 8; });
  return bytes;
}

int packed_zero_point(TensorType type) {
  switch (type) {
    case TensorType::Q4_0:
      return 8;
    case TensorType::Q5_0:
      return 16;
    case TensorType::Q8_0:
    case TensorType::IQ4_NL:
    case TensorType::IQ4_XS:
    case TensorType::MXFP4:
      return 128;
    case TensorType::Q6_K:
    case TensorType::Q3_K:
    case TensorType::Q2_K:
      return kPackedHalfSums;
    default:
      return 0;
  }
}

bool packable_data(TensorType type, const void* data, size_t row_stride, int64_t n_in, int64_t n_out) {
  if (!packable_type(type)) return false;
  if (type != TensorType::MXFP4) return true;
  fp16_t d;
  for (int64_t r = 0; r < n_out; ++r) {
    const auto* blocks = reinterpret_cast<const BlockMXFP4*>(static_cast<const uint8_t*>(data) +
                                                             static_cast<size_t>(r) * row_stride);
    for (int64_t b = 0; b < n_in / 32; ++b)
      if (!mxfp4_scale_fp16(blocks[b].e, &d)) return false;
  }
  return true;
}

void repack_group(TensorType type, const uint8_t* src, size_t src_row_stride, int64_t n_out, int64_t g,
                  int64_t nb, uint8_t* dst) {
  if (is_super_type(type)) return repack_super_group(type, src, src_row_stride, n_out, g, nb, dst);
  const size_t out_bytes = packed_block_bytes(type);
  const size_t in_bytes = type_traits(type).block_bytes;
  std::memset(dst, 0, out_bytes * static_cast<size_t>(nb));  // padding rows and qh masks start at 0
  for (int r = 0; r < kPackRows; ++r) {
    const int64_t row = g * kPackRows + r;
    if (row >= n_out) break;
    const uint8_t* src_row = src + static_cast<size_t>(row) * src_row_stride;
    for (int64_t b = 0; b < nb; ++b)
      put_row(type, read_block(type, src_row + static_cast<size_t>(b) * in_bytes), r,
              dst + static_cast<size_t>(b) * out_bytes);
  }
}

}  // namespace strata::cpu
