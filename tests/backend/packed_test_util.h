// Shared check of the interleaved kernels (packed_kernels.h) over every call shape.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/packed_kernels.h"

namespace strata::cpu::testing {

// Runs gemm on one group of nb packed blocks (w, w_bytes) and a full activation tile for every
// token count 1..kPackCols and row count 1..kPackRows, the weights one byte and the activation
// quants three bytes off alignment, outputs one float off and kPackRows + 3 apart. Outputs past
// the call's tokens and rows must stay untouched; the others within expect(r, c), which returns
// {value, tolerance}. `what` names the problem in failures; super_sums: the tile's activations have
// one scale per super-block (is_super_act_mode).
template <class Expect>
void check_packed_call_shapes(PackedGemmFn gemm, TensorType type, const uint8_t* w, size_t w_bytes,
                              int64_t nb, const std::vector<int8_t>& act_qs, const PackedActMeta* act_meta,
                              const Expect& expect, const std::string& what, bool super_sums = false) {
  std::vector<uint8_t> wbuf(w_bytes + 1);
  std::memcpy(wbuf.data() + 1, w, w_bytes);
  std::vector<int8_t> qbuf(act_qs.size() + 3);
  std::memcpy(qbuf.data() + 3, act_qs.data(), act_qs.size());
  const PackedActTile tile{qbuf.data() + 3, act_meta, super_sums};
  for (int nc = 1; nc <= kPackCols; ++nc)
    for (int n_rows = 1; n_rows <= kPackRows; ++n_rows) {
      const size_t ys = kPackRows + 3;
      std::vector<float> y(ys * kPackCols + 1, -777.0f);
      gemm(type, wbuf.data() + 1, nb, tile, nc, y.data() + 1, ys, n_rows);
      for (int c = 0; c < kPackCols; ++c)
        for (int r = 0; r < static_cast<int>(ys); ++r) {
          const float got = y[1 + c * ys + r];
          if (c >= nc || r >= n_rows) {
            ASSERT_EQ(got, -777.0f) << what << ", " << nc << " tokens, " << n_rows << " rows";
            continue;
          }
          const std::pair<double, double> want = expect(r, c);
          ASSERT_NEAR(got, want.first, want.second)
              << what << ", " << nc << " tokens, " << n_rows << " rows: element " << r << "," << c;
        }
    }
}

// Batch invariance (kernels.h): with token 0's activations (of the tile act_qs / act_meta, nb
// blocks) copied into every slot, a call of any token count gives every slot the bits of a
// one-token call, and a call of part_rows rows the first part_rows of them. w: one group.
inline void check_packed_batch_invariance(PackedGemmFn gemm, TensorType type, const uint8_t* w, int64_t nb,
                                          const std::vector<int8_t>& act_qs,
                                          const std::vector<PackedActMeta>& act_meta, int part_rows,
                                          bool super_sums = false) {
  std::vector<int8_t> qs(act_qs.size());
  std::vector<PackedActMeta> meta(act_meta.size());
  for (int64_t b = 0; b < nb; ++b)
    for (int c = 0; c < kPackCols; ++c) {
      std::memcpy(qs.data() + (b * kPackCols + c) * 32, act_qs.data() + b * kPackCols * 32, 32);
      meta[static_cast<size_t>(b * kPackCols + c)] = act_meta[static_cast<size_t>(b * kPackCols)];
    }
  const PackedActTile same{qs.data(), meta.data(), super_sums};
  std::vector<float> one(kPackRows);
  gemm(type, w, nb, PackedActTile{act_qs.data(), act_meta.data(), super_sums}, 1, one.data(), kPackRows,
       kPackRows);
  for (int nc = 1; nc <= kPackCols; ++nc) {
    std::vector<float> y(kPackCols * kPackRows);
    gemm(type, w, nb, same, nc, y.data(), kPackRows, kPackRows);
    for (int c = 0; c < nc; ++c)
      ASSERT_EQ(std::memcmp(y.data() + c * kPackRows, one.data(), sizeof(float) * kPackRows), 0)
          << nc << " tokens, slot " << c;
    std::vector<float> part(kPackCols * kPackRows, 0.0f);
    gemm(type, w, nb, same, nc, part.data(), kPackRows, part_rows);
    ASSERT_EQ(std::memcmp(part.data(), one.data(), sizeof(float) * static_cast<size_t>(part_rows)), 0)
        << nc << " tokens, " << part_rows << " rows";
  }
}

}  // namespace strata::cpu::testing
