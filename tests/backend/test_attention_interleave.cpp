// A batch with many sequences runs each sequence's kv heads together, block by block
// (attention_chunks, attention.h); a batch of one sequence runs one kv head at a time. The
// interleaving only reorders independent work, so the outputs must be bit-identical to running
// every sequence alone, at every ISA level, for float and block-quantized caches (the per-head
// path is itself checked against float64 attention in test_attention.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "core/cpu_features.h"

namespace strata {
namespace {

struct Case {
  KvType k, v;
  int n_head, n_head_kv, window;
};

TEST(AttentionInterleave, ManySequencesEqualEachAlone) {
  const Case cases[] = {{KvType::F16, KvType::F16, 8, 4, 0},    {KvType::Q8_0, KvType::Q8_0, 8, 4, 0},
                        {KvType::Q4_0, KvType::Q8_0, 6, 3, 0},  {KvType::F32, KvType::F32, 16, 8, 0},
                        {KvType::Q8_0, KvType::Q8_0, 8, 2, 20}, {KvType::KIVI4, KvType::KIVI2, 4, 4, 0}};
  constexpr int hd = 64, bs = 16, n_seq = 9;
  const IsaLevel saved = isa_level();
  auto backend = make_cpu_backend(2);
  for (const Case& c : cases)
    for (IsaLevel isa : {IsaLevel::Scalar, IsaLevel::Avx2, IsaLevel::Avx512}) {
      if (!isa_supported(isa)) continue;
      set_isa_level(isa);
      std::mt19937 gen(5);
      std::normal_distribution<float> nd(0.0f, 1.0f);
      // Sequence i holds 17 * i + 5 tokens in blocks of its own, taken from the pool in turn.
      std::vector<int32_t> len(n_seq), pos, seq;
      std::vector<int64_t> slot;
      std::vector<std::vector<int32_t>> tables(n_seq);
      int32_t n_blocks = 0;
      for (int i = 0; i < n_seq; ++i) {
        len[i] = 17 * i + 5;
        for (int b = 0; b < (len[i] + bs - 1) / bs; ++b) tables[i].push_back(n_blocks++);
      }
      KvLayerView kv;
      kv.k_type = c.k;
      kv.v_type = c.v;
      kv.n_blocks = n_blocks;
      kv.block_size = bs;
      kv.n_head_kv = c.n_head_kv;
      kv.head_dim = hd;
      kv.rotate_k = !kv_type_is_float(c.k) && !kv_type_is_kivi(c.k);
      std::vector<uint8_t> kb(kv.k_layout().bytes * c.n_head_kv * n_blocks),
          vb(kv.v_layout().bytes * c.n_head_kv * n_blocks);
      kv.k = kb.data();
      kv.v = vb.data();
      KvStaging staging;
      std::vector<uint16_t> sk, sv;
      if (kv_type_is_kivi(c.k)) {
        staging.n_slots = n_seq;
        staging.slot_of_block.assign(n_blocks, -1);
        staging.block_of_slot.assign(n_seq, -1);
        staging.n_written.assign(n_seq, 0);
        staging.last_write.assign(n_seq, 0);
        sk.resize(size_t(n_seq) * c.n_head_kv * bs * hd);
        sv.resize(sk.size());
        staging.k = sk.data();
        staging.v = sv.data();
        kv.staging = &staging;
      }
      AttentionBatch all;
      for (int i = 0; i < n_seq; ++i) {
        all.block_tables.push_back(tables[i].data());
        all.n_blocks.push_back(static_cast<int32_t>(tables[i].size()));
      }
      for (int i = 0; i < n_seq; ++i) {  // fill: one prefill per sequence
        std::vector<float> k(size_t(len[i]) * c.n_head_kv * hd), v(k.size());
        for (auto& x : k) x = nd(gen);
        for (auto& x : v) x = nd(gen);
        std::vector<int32_t> fp(len[i]), fs(len[i], i);
        std::vector<int64_t> fsl(len[i]);
        for (int t = 0; t < len[i]; ++t) fp[t] = t, fsl[t] = int64_t(tables[i][t / bs]) * bs + t % bs;
        AttentionBatch fill = all;
        fill.n_tokens = len[i];
        fill.pos = fp.data();
        fill.seq = fs.data();
        fill.slot = fsl.data();
        backend->store_kv(kv, k.data(), v.data(), fill);
      }
      // Decode: the last position of every sequence, all in one batch, then each alone.
      for (int i = 0; i < n_seq; ++i) {
        pos.push_back(len[i] - 1);
        seq.push_back(i);
        slot.push_back(int64_t(tables[i][(len[i] - 1) / bs]) * bs + (len[i] - 1) % bs);
      }
      all.n_tokens = n_seq;
      all.pos = pos.data();
      all.seq = seq.data();
      all.slot = slot.data();
      AttentionParams p;
      p.n_head = c.n_head;
      p.n_head_kv = c.n_head_kv;
      p.head_dim = hd;
      p.scale = 0.125f;
      p.sliding_window = c.window;
      const size_t row = size_t(c.n_head) * hd;
      std::vector<float> q(row * n_seq), out_all(q.size(), NAN), out_one(q.size(), NAN);
      for (auto& x : q) x = nd(gen);
      backend->attention(q.data(), kv, all, p, out_all.data());
      for (int i = 0; i < n_seq; ++i) {
        AttentionBatch one = all;
        one.n_tokens = 1;
        one.pos = pos.data() + i;
        one.seq = seq.data() + i;
        one.slot = slot.data() + i;
        backend->attention(q.data() + row * i, kv, one, p, out_one.data() + row * i);
      }
      for (size_t j = 0; j < out_all.size(); ++j)
        ASSERT_EQ(out_all[j], out_one[j])
            << kv_type_name(c.k) << "/" << kv_type_name(c.v) << " " << isa_name(isa) << " at " << j;
    }
  set_isa_level(saved);
}

}  // namespace
}  // namespace strata
