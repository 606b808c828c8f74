// KvGeometry's byte accounting and the layer views KvStorage hands out, by hand-derived sizes.
#include <gtest/gtest.h>

#include "backend/backend.h"
#include "kv/kv_storage.h"

namespace strata {
namespace {

KvGeometry geometry(int32_t hd, int32_t hd_v, bool v_in_k, KvType type) {
  KvGeometry g;
  g.n_layer = 3;
  g.n_head_kv = 2;
  g.head_dim = hd;
  g.head_dim_v = hd_v;
  g.v_in_k = v_in_k;
  g.block_size = 16;
  g.type = KvCacheType{type, type, true};
  return g;
}

TEST(KvStorage, BytesPerBlockCountsKAndVHeadSizes) {
  // 3 layers x 2 kv heads x 16 tokens x (K + V elements) x element bytes.
  EXPECT_EQ(geometry(64, 0, false, KvType::F16).bytes_per_block(), 3u * 2 * 16 * (64 + 64) * 2);
  EXPECT_EQ(geometry(64, 0, false, KvType::F32).bytes_per_block(), 3u * 2 * 16 * (64 + 64) * 4);
  EXPECT_EQ(geometry(192, 128, false, KvType::F16).bytes_per_block(), 3u * 2 * 16 * (192 + 128) * 2);
  // MLA: only the K rows (latent + rope) are stored.
  EXPECT_EQ(geometry(576, 512, true, KvType::F16).bytes_per_block(), 3u * 2 * 16 * 576 * 2);
}

TEST(KvStorage, QuantizedTypesCountTheirRealBytes) {
  KvGeometry g = geometry(64, 0, false, KvType::F16);
  g.type = KvCacheType{KvType::Q8_0, KvType::Q8_0, true};
  // Per layer and kv head: 16 tokens x 2 groups of 32 x 34 bytes, for K and for V.
  EXPECT_EQ(g.bytes_per_block(), 3u * 2 * (16 * 2 * 34) * 2);
  g.type = KvCacheType{KvType::Q4_0, KvType::F16, true};
  EXPECT_EQ(g.bytes_per_block(), 3u * 2 * (16 * 2 * 18 + 16 * 64 * 2));
  g.type = KvCacheType{KvType::KIVI2, KvType::KIVI4, true};  // K: 64 channels of 4 + 16 * 2 / 8 bytes
  EXPECT_EQ(g.bytes_per_block(), 3u * 2 * (64 * (4 + 4) + 16 * 2 * 20));
  // The same memory admits proportionally more blocks: 128 / 68 of F16's for Q8_0.
  KvGeometry f16 = geometry(64, 0, false, KvType::F16), q8 = f16;
  q8.type = KvCacheType{KvType::Q8_0, KvType::Q8_0, true};
  const size_t mem = size_t(64) << 20;
  EXPECT_EQ(KvStorage::blocks_for_bytes(f16, mem), int32_t(mem / f16.bytes_per_block()));
  EXPECT_EQ(KvStorage::blocks_for_bytes(q8, mem), int32_t(mem / q8.bytes_per_block()));
  EXPECT_NEAR(double(KvStorage::blocks_for_bytes(q8, mem)) / KvStorage::blocks_for_bytes(f16, mem),
              128.0 / 68, 1e-3);
}

TEST(KvStorage, KiviStagingIsAllocatedAndCounted) {
  auto backend = make_cpu_backend(1);
  KvGeometry g = geometry(64, 0, false, KvType::F16);
  g.type = KvCacheType{KvType::KIVI4, KvType::Q8_0, true};
  g.staging_slots = 4;
  // Staging holds F16 K (only K is KIVI) of 4 slots x 2 kv heads x 16 tokens x 64 per layer.
  EXPECT_EQ(g.staging_bytes(100), 3u * 4 * 2 * 16 * 64 * 2);
  EXPECT_EQ(g.staging_bytes(2), 3u * 2 * 2 * 16 * 64 * 2);  // never more slots than blocks
  KvStorage kv(*backend, g, 10);
  EXPECT_EQ(kv.bytes(), 10 * g.bytes_per_block() + g.staging_bytes(10));
  ASSERT_NE(kv.layer(0).staging, nullptr);
  EXPECT_NE(kv.layer(0).staging->k, nullptr);
  EXPECT_EQ(kv.layer(0).staging->v, nullptr);
  EXPECT_EQ(kv.layer(0).staging->n_slots, 4);
  EXPECT_FALSE(kv.layer(0).rotate_k);  // KIVI keys are never rotated
  const size_t mem = 50 * g.bytes_per_block() + g.staging_bytes(INT32_MAX);
  EXPECT_EQ(KvStorage::blocks_for_bytes(g, mem), 50);
  // Rotation: on for per-token quantized K, off for float K, off with --no-kv-rotation and MLA.
  g.type = KvCacheType{KvType::Q4_0, KvType::F16, true};
  EXPECT_TRUE(g.rotate_k());
  g.type.rotate_k = false;
  EXPECT_FALSE(g.rotate_k());
  g.type = KvCacheType{KvType::F16, KvType::Q4_0, true};
  EXPECT_FALSE(g.rotate_k());
  EXPECT_EQ(KvStorage(*backend, g, 2).layer(0).staging, nullptr);
}

TEST(KvStorage, LayerViewsDescribeTheGeometry) {
  auto backend = make_cpu_backend(1);
  for (bool v_in_k : {false, true}) {
    const KvGeometry g = geometry(96, 64, v_in_k, KvType::F16);
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
  EXPECT_EQ(KvStorage::blocks_for_bytes(geometry(64, 0, false, KvType::F16), 10 * 24576 + 5),
            10);  // 3 x 2 x 16 x 128 x 2 bytes a block
}

}  // namespace
}  // namespace strata
