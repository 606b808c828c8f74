// Attention micro-benchmark on the TinyLlama-1.1B shape (32 query heads, 4 KV heads of 64, cache
// in 16-token blocks): one decode step of n_seq sequences at context n_ctx, i.e. one layer's
// backend.attention call of a batched decode, for the KV cache types below (K and V types;
// quantized K is rotated, the default). The cache is filled with store_kv. Counters: GB/s of K/V
// read (each sequence reads its whole cache once per layer, at the type's real bytes) and
// sequences per second per layer.
//
//   bench_attention [--benchmark_format=json] [--benchmark_filter=...]   (STRATA_BENCH_THREADS, default 2)
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <vector>

#include "backend/backend.h"

namespace strata {
namespace {

constexpr int32_t kHeads = 32, kHeadsKv = 4, kHeadDim = 64, kBlock = 16;

// The cache types measured, by benchmark argument.
struct KvCase {
  KvType k, v;
};
constexpr KvCase kCases[] = {{KvType::F16, KvType::F16},   {KvType::Q8_0, KvType::Q8_0},
                             {KvType::Q4_0, KvType::Q8_0}, {KvType::Q4_0, KvType::Q4_0},
                             {KvType::F32, KvType::F32},   {KvType::KIVI4, KvType::KIVI2},
                             {KvType::Q8_0, KvType::F16},  {KvType::F16, KvType::Q8_0}};

int bench_threads() {
  const char* env = std::getenv("STRATA_BENCH_THREADS");
  return env ? std::atoi(env) : 2;
}

void BM_AttentionDecode(benchmark::State& state) {
  const int32_t n_seq = static_cast<int32_t>(state.range(0)), n_ctx = static_cast<int32_t>(state.range(1));
  const KvCase kc = kCases[state.range(2)];
  const int32_t blocks_per_seq = (n_ctx + kBlock - 1) / kBlock, n_blocks = blocks_per_seq * n_seq;
  static std::unique_ptr<Backend> backend = make_cpu_backend(bench_threads());
  KvLayerView kv;
  kv.k_type = kc.k;
  kv.v_type = kc.v;
  kv.n_blocks = n_blocks;
  kv.block_size = kBlock;
  kv.n_head_kv = kHeadsKv;
  kv.head_dim = kHeadDim;
  kv.rotate_k = !kv_type_is_float(kc.k);
  const size_t k_tile = kv.k_layout().bytes, v_tile = kv.v_layout().bytes;
  std::vector<uint8_t> k(k_tile * kHeadsKv * static_cast<size_t>(n_blocks));  // [n_blocks, n_head_kv] tiles
  std::vector<uint8_t> v(v_tile * kHeadsKv * static_cast<size_t>(n_blocks));
  kv.k = k.data();
  kv.v = v.data();
  KvStaging staging;  // KIVI: the partly filled tail blocks
  std::vector<uint16_t> staged_k, staged_v;
  if (kv_type_is_kivi(kc.k) || kv_type_is_kivi(kc.v)) {
    staging.n_slots = n_seq;
    staging.slot_of_block.assign(static_cast<size_t>(n_blocks), -1);
    staging.block_of_slot.assign(static_cast<size_t>(n_seq), -1);
    staging.n_written.assign(static_cast<size_t>(n_seq), 0);
    staging.last_write.assign(static_cast<size_t>(n_seq), 0);
    const size_t slot = static_cast<size_t>(kHeadsKv) * kBlock * kHeadDim;
    if (kv_type_is_kivi(kc.k)) staged_k.resize(slot * n_seq), staging.k = staged_k.data();
    if (kv_type_is_kivi(kc.v)) staged_v.resize(slot * n_seq), staging.v = staged_v.data();
    kv.staging = &staging;
  }

  uint64_t s = 88172645463325252ull;
  auto rnd = [&] {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return static_cast<float>(s % 2001) / 1000.0f - 1.0f;
  };
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(n_seq));
  std::vector<int32_t> pos, seq;
  std::vector<int64_t> slot;
  for (int32_t i = 0; i < n_seq; ++i) {
    for (int32_t b = 0; b < blocks_per_seq; ++b)
      tables[static_cast<size_t>(i)].push_back(i * blocks_per_seq + b);
    for (int32_t p = 0; p < n_ctx; ++p) {
      pos.push_back(p);
      seq.push_back(i);
      slot.push_back(static_cast<int64_t>(i * blocks_per_seq + p / kBlock) * kBlock + p % kBlock);
    }
  }
  AttentionBatch ab;
  for (int32_t i = 0; i < n_seq; ++i) {
    ab.block_tables.push_back(tables[static_cast<size_t>(i)].data());
    ab.n_blocks.push_back(blocks_per_seq);
  }
  {  // fill the cache: one prefill batch per sequence
    const size_t row = static_cast<size_t>(kHeadsKv) * kHeadDim;
    std::vector<float> kf(row * n_ctx), vf(kf.size());  // [n_ctx, n_head_kv, hd]
    for (int32_t i = 0; i < n_seq; ++i) {
      for (auto& x : kf) x = rnd();
      for (auto& x : vf) x = rnd();
      AttentionBatch fill = ab;
      fill.n_tokens = n_ctx;
      fill.pos = pos.data() + static_cast<size_t>(i) * n_ctx;
      fill.seq = seq.data() + static_cast<size_t>(i) * n_ctx;
      fill.slot = slot.data() + static_cast<size_t>(i) * n_ctx;
      backend->store_kv(kv, kf.data(), vf.data(), fill);
    }
  }
  // The decode step: each sequence's last position.
  std::vector<int32_t> dpos(static_cast<size_t>(n_seq), n_ctx - 1), dseq(static_cast<size_t>(n_seq));
  std::vector<int64_t> dslot(static_cast<size_t>(n_seq));
  for (int32_t i = 0; i < n_seq; ++i)
    dseq[static_cast<size_t>(i)] = i,
    dslot[static_cast<size_t>(i)] = slot[static_cast<size_t>(i + 1) * n_ctx - 1];
  ab.n_tokens = n_seq;
  ab.pos = dpos.data();
  ab.seq = dseq.data();
  ab.slot = dslot.data();
  std::vector<float> q(static_cast<size_t>(n_seq) * kHeads * kHeadDim), out(q.size());  // [n_seq, n_head, hd]
  for (auto& x : q) x = rnd();
  AttentionParams p;
  p.n_head = kHeads;
  p.n_head_kv = kHeadsKv;
  p.head_dim = kHeadDim;
  p.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  for (auto _ : state) {
    backend->attention(q.data(), kv, ab, p, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  const double kv_bytes =
      static_cast<double>(n_seq) * blocks_per_seq * kHeadsKv * static_cast<double>(k_tile + v_tile);
  state.SetLabel(std::string(kv_type_name(kc.k)) + "/" + std::string(kv_type_name(kc.v)));
  state.counters["GB/s"] = benchmark::Counter(kv_bytes * static_cast<double>(state.iterations()) / 1e9,
                                              benchmark::Counter::kIsRate);
  state.counters["seq/s"] = benchmark::Counter(
      static_cast<double>(n_seq) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// n_seq, n_ctx, KV case (index into kCases): the F16 decode shapes, then every type at 16 x 4096.
BENCHMARK(BM_AttentionDecode)
    ->ArgsProduct({{1, 16, 64}, {192, 1024}, {0}})
    ->ArgsProduct({{16}, {4096}, {0, 1, 2, 3, 4, 5, 6, 7}})
    ->ArgsProduct({{4}, {1024}, {0, 1, 3, 6, 7}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace strata

BENCHMARK_MAIN();
