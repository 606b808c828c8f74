// Query preparation for the interleaved key tiles (kv_key_tile.h), shared by every ISA level's
// file: the KV cache's Q8_0 group quantizer (kv_quant_group.h), then the levels, scales and sums
// unpacked.
// Internal linkage only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "backend/cpu/block_access.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/kv_key_tile.h"
#include "backend/cpu/kv_quant_group.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

// The query's groups get the keys' Q8_0 quantizer (searched scales for narrow heads): the score's
// error is the sum of the key's and the query's rounding, about equal shares for rotated heads.
void prepare_query(const float* x, int32_t n_groups, uint8_t* row) {
  BlockQ8_0 blocks[kMaxQueryGroups];
  for (int32_t g = 0; g < n_groups; ++g)
    quantize_q8_0_group_kv(x + static_cast<size_t>(g) * kQK, reinterpret_cast<uint8_t*>(&blocks[g]), -127);
  // The row may sit at any byte offset (the callers' scratch, the tests' unaligned rows): scales
  // and sums are stored bytewise.
  uint8_t* d = row + static_cast<size_t>(n_groups) * kQK;  // [n_groups] f32
  uint8_t* sums = d + 4 * static_cast<size_t>(n_groups);   // [n_groups] i32
  for (int32_t g = 0; g < n_groups; ++g) {
    std::memcpy(row + static_cast<size_t>(g) * kQK, blocks[g].qs, kQK);
    const float scale = fp16_to_f32(blocks[g].d);
    std::memcpy(d + 4 * static_cast<size_t>(g), &scale, 4);
    int32_t s = 0;
    for (int j = 0; j < kQK; ++j) s += blocks[g].qs[j];
    std::memcpy(sums + 4 * static_cast<size_t>(g), &s, 4);
  }
}

inline const int8_t* query_levels(const uint8_t* row) {
  return reinterpret_cast<const int8_t*>(row);
}
inline float query_scale(const uint8_t* row, int32_t n_groups, int32_t g) {
  return load_f32(row + static_cast<size_t>(n_groups) * kQK + 4 * static_cast<size_t>(g));
}
inline int32_t query_sum(const uint8_t* row, int32_t n_groups, int32_t g) {
  int32_t s;
  std::memcpy(&s, row + static_cast<size_t>(n_groups) * (kQK + 4) + 4 * static_cast<size_t>(g), 4);
  return s;
}

// The SIMD levels' score loop: query rows kRows at a time (rows past n_rows read a row of zeros:
// scored, never stored) x chunks of kKeys keys. chunk(std::bool_constant<Q8_0>, rows, n, j0, out)
// scores keys j0.. of one row block into out, the block's first row of s.
template <int kRows, int kKeys, class Chunk>
void score_in_blocks(KvType type, const uint8_t* q, size_t q_stride, int n_rows, int bs, float* s,
                     const Chunk& chunk) {
  alignas(64) static const uint8_t kZeroRow[kMaxQueryGroups * 40] = {};
  for (int r0 = 0; r0 < n_rows; r0 += kRows) {
    const uint8_t* rows[kRows];
    for (int r = 0; r < kRows; ++r)
      rows[r] = r0 + r < n_rows ? q + static_cast<size_t>(r0 + r) * q_stride : kZeroRow;
    const int nr = std::min(kRows, n_rows - r0);
    for (int j0 = 0; j0 < bs; j0 += kKeys) {
      if (type == KvType::Q8_0)
        chunk(std::true_type{}, rows, nr, j0, s + r0 * bs);
      else
        chunk(std::false_type{}, rows, nr, j0, s + r0 * bs);
    }
  }
}

}  // namespace
}  // namespace strata::cpu
