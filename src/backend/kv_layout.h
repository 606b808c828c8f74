// KV cache element types and the one definition of how each lays out a block of K or V.
//
// The cache is a pool of blocks of block_size tokens; each (block, kv head) owns one K tile and one
// V tile (none for V when V lives in K, MLA). A tile's layout depends on its type and on whether it
// holds keys or values:
//
//   F32, F16, BF16 keys      Transposed: element e of token t at e * block_size + t, so a query's
//                            scores over the tile are head_dim vector multiply-adds across keys.
//   F32, F16, BF16 values    TokenRows: token t's row of dim elements at t * dim.
//   Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 TokenRows: each token's row is quantized along the head in GGUF
//   IQ4_NL values; Q4_1 Q5_0 blocks of 32 (quant/blocks.h: BlockIQ4_NL too); a head size that
//   Q5_1 IQ4_NL keys         is not a multiple of 32 is padded with zeros to the next multiple
//                            (padded_dim), so the padding costs memory (e.g. 96 bytes a row for
//                            80-wide Q8_0 heads instead of 85).
//   Q8_0, Q4_0 keys          Interleaved: the same per-token groups of 32 with the same scales
//                            and bytes per token, arranged so that one 64-byte load holds 4
//                            elements of 16 keys: the attention scores 16 keys per vector with
//                            int8 dot products (vpdpbusd), no horizontal sums. For group g of
//                            n_groups = padded_dim / 32: the scales are fp16 d[g][block_size] at
//                            the tile's start; then the levels, at n_groups * block_size * 2:
//                              Q8_0: int8 [n_groups][8][block_size][4]: [g][c][t][i] is element
//                                    32 g + 4 c + i of token t;
//                              Q4_0: bytes [n_groups][4][block_size][4]: [g][c][t][i] holds element
//                                    32 g + 8 c + i (low nibble) and 32 g + 8 c + 4 + i (high
//                                    nibble) of token t, as q + 8.
//   KIVI2, KIVI4 values      TokenRows of asymmetric groups of 32 per token (KIVI's per-token V):
//                            KIVI4 is Q4_1's block, KIVI2 is KvBlockKivi2.
//   KIVI2, KIVI4 keys        ChannelRows: one asymmetric group per element (channel) across the
//                            block's tokens (KIVI's per-channel K), KvKiviChannel below.
//
// KIVI keys cannot be quantized before their block is complete, so KIVI blocks that are being
// filled live in full precision (F16) in a staging area (KvStaging in backend.h) until their last
// token is written; this is KIVI's full-precision window of recent tokens, mapped onto blocks:
// the window is the tail block of each sequence, 1 to block_size tokens long.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/fp16.h"

namespace strata {

enum class KvType : uint8_t { F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, KIVI2, KIVI4 };
constexpr int kNumKvTypes = 11;

// llama.cpp's spelling for --cache-type-k/-v: "f32", "f16", "bf16", "q8_0", ..., "iq4_nl"; and
// "kivi2", "kivi4".
std::string_view kv_type_name(KvType type);
// Case-insensitive; nullopt if unknown.
std::optional<KvType> kv_type_from_name(std::string_view name);
// "f32, f16, ..., kivi4" for messages and --help.
std::string kv_type_names();
bool kv_type_is_float(KvType type);  // F32, F16, BF16
bool kv_type_is_kivi(KvType type);
int kv_kivi_bits(KvType type);  // 2 or 4 for KIVI types, else 0

// IQ4_NL keys and values are GGUF's IQ4_NL blocks (quant/blocks.h BlockIQ4_NL: x = d *
// kIq4nlValues[q], q 4-bit in Q4_0's nibble order), so they share the weight type's kernels.

// KIVI 2-bit values, per token in groups of 32: x = d * q + m, q 2-bit, element j in bits
// 2 * (j % 4) of qs[j / 4].
struct KvBlockKivi2 {
  fp16_t d;
  fp16_t m;
  uint8_t qs[8];
};
static_assert(sizeof(KvBlockKivi2) == 12);

// KIVI keys, one group per channel over the block's tokens: fp16 d, fp16 m, then block_size
// levels of `bits` bits, token t in bits bits * (t % (8 / bits)) of byte t / (8 / bits);
// x = d * q + m.
constexpr size_t kKiviChannelHeader = 4;
static inline size_t kivi_channel_bytes(int bits, int32_t block_size) {
  return kKiviChannelHeader + static_cast<size_t>(block_size) * bits / 8;
}

enum class KvTileOrder {
  Transposed,   // element e of token t at e * block_size + t (float keys)
  TokenRows,    // one row of row_bytes per token
  ChannelRows,  // one group of row_bytes per element across the tokens (KIVI keys)
  Interleaved,  // Q8_0 / Q4_0 keys: scales, then 4-element groups of all tokens (see above)
};

// Interleaved keys: the byte offset of the 4 bytes [g][c][t] in the tile (c < 8 for Q8_0,
// c < 4 for Q4_0), and of scale d[g][t].
static inline size_t kv_interleaved_quants(int32_t n_groups, int32_t block_size, int32_t g, int32_t c,
                                           int32_t t, bool q8) {
  const size_t subgroups = q8 ? 8 : 4;
  return static_cast<size_t>(n_groups) * block_size * 2 +
         ((static_cast<size_t>(g) * subgroups + c) * block_size + t) * 4;
}
static inline size_t kv_interleaved_scale(int32_t block_size, int32_t g, int32_t t) {
  return (static_cast<size_t>(g) * block_size + t) * 2;
}

struct KvTileLayout {
  KvType type = KvType::F16;
  KvTileOrder order = KvTileOrder::Transposed;
  int32_t dim = 0;         // elements per token (head_dim or head_dim_v)
  int32_t padded_dim = 0;  // TokenRows of 32-element groups: dim rounded up to 32; else dim
  int32_t block_size = 0;
  size_t elem_bytes = 0;  // float types: bytes of one element; else 0
  size_t row_bytes = 0;   // TokenRows, Interleaved: one token's share; ChannelRows: one channel; Transposed:
                          // one element's tokens
  size_t bytes = 0;       // the whole tile
};

// The layout of a K tile (is_k) or V tile of `type` with `dim` elements per token. Throws
// strata::Error for a combination the type cannot store (a KIVI block size that does not fill whole
// bytes).
KvTileLayout kv_tile_layout(KvType type, bool is_k, int32_t dim, int32_t block_size);

}  // namespace strata
