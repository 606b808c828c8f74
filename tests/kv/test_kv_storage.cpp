// KvGeometry's byte accounting and the layer views KvStorage hands out, by hand-derived sizes.
#include <gtest/gtest.h>

#include "backend/backend.h"
#include "kv/kv_storage.h"

namespace strata {
namespace {

KvGeometry geometry(int32_t hd, int32_t hd_v, bool v_in_k, TensorType type) {
  KvGeometry g;
  g.n_layer = 3;
  g.n_head_kv = 2;
  g.head_dim = hd;
  g.head_dim_v = hd_v;
  g.v_in_k = v_in_k;
  g.block_size = 16;
  g.type = type;
  return g;
}

TEST(KvStorage, BytesPerBlockCountsKAndVHeadSizes) {
  // 3 layers x 2 kv heads x 16 tokens x (K + V elements) x element bytes.
  EXPECT_EQ(geometry(64, 0, false, TensorType::F16).bytes_per_block(), 3u * 2 * 16 * (64 + 64) * 2);
  EXPECT_EQ(geometry(64, 0, false, TensorType::F32).bytes_per_block(), 3u * 2 * 16 * (64 + 64) * 4);
  EXPECT_EQ(geometry(192, 128, false, TensorType::F16).bytes_per_block(), 3u * 2 * 16 * (192 + 128) * 2);
  // MLA: only the K rows (latent + rope) are stored.
  EXPECT_EQ(geometry(576, 512, true, TensorType::F16).bytes_per_block(), 3u * 2 * 16 * 576 * 2);
}

TEST(KvStorage, LayerViewsDescribeTheGeometry) {
  auto backend = make_cpu_backend(1);
  for (bool v_in_k : {false, true}) {
    const KvGeometry g = geometry(96, 64, v_in_k, TensorType::F16);
    KvStorage kv(*backend, g, 5);
    EXPECT_EQ(kv.bytes(), 5 * g.bytes_per_block());
    for (int32_t il = 0; il < g.n_layer; ++il) {
      const KvLayerView& view = kv.layer(il);
      EXPECT_NE(view.k, nullptr);
      EXPECT_EQ(view.v == nullptr, v_in_k);
      EXPECT_EQ(view.head_dim, 96);
      EXPECT_EQ(view.head_dim_v, 64);
      EXPECT_EQ(view.v_in_k, v_in_k);
      EXPECT_EQ(view.n_blocks, 5);
    }
  }
  EXPECT_EQ(KvStorage::blocks_for_bytes(geometry(64, 0, false, TensorType::F16), 10 * 24576 + 5),
            10);  // 3 x 2 x 16 x 128 x 2 bytes a block
}

}  // namespace
}  // namespace strata
