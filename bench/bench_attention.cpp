// Attention micro-benchmark on the TinyLlama-1.1B shape (32 query heads, 4 KV heads of 64, F16
// cache in 16-token blocks): one decode step of n_seq sequences at context n_ctx, i.e. one
// layer's backend.attention call of a batched decode. Counter: GB/s of K/V read (each sequence
// reads its whole cache once per layer) and tokens (sequences) per second per layer.
//
//   bench_attention [--benchmark_format=json]     (STRATA_BENCH_THREADS, default 2)
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "core/fp16.h"

namespace strata {
namespace {

constexpr int32_t kHeads = 32, kHeadsKv = 4, kHeadDim = 64, kBlock = 16;

int bench_threads() {
  const char* env = std::getenv("STRATA_BENCH_THREADS");
  return env ? std::atoi(env) : 2;
}

void BM_AttentionDecode(benchmark::State& state) {
  const int32_t n_seq = static_cast<int32_t>(state.range(0)), n_ctx = static_cast<int32_t>(state.range(1));
  const int32_t blocks_per_seq = (n_ctx + kBlock - 1) / kBlock, n_blocks = blocks_per_seq * n_seq;
  const size_t tile = static_cast<size_t>(kHeadsKv) * kBlock * kHeadDim;       // one block, all kv heads
  std::vector<uint16_t> k(tile * static_cast<size_t>(n_blocks)), v(k.size());  // [n_blocks, ...] f16
  uint64_t s = 88172645463325252ull;
  auto rnd = [&] {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return static_cast<float>(s % 2001) / 1000.0f - 1.0f;
  };
  for (auto& x : k) x = f32_to_fp16(rnd());
  for (auto& x : v) x = f32_to_fp16(rnd());
  std::vector<float> q(static_cast<size_t>(n_seq) * kHeads * kHeadDim), out(q.size());  // [n_seq, n_head, hd]
  for (auto& x : q) x = rnd();
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(n_seq));
  std::vector<int32_t> pos(static_cast<size_t>(n_seq), n_ctx - 1), seq(static_cast<size_t>(n_seq));
  std::vector<int64_t> slot(static_cast<size_t>(n_seq));
  AttentionBatch ab;
  ab.n_tokens = n_seq;
  for (int32_t i = 0; i < n_seq; ++i) {
    for (int32_t b = 0; b < blocks_per_seq; ++b)
      tables[static_cast<size_t>(i)].push_back(i * blocks_per_seq + b);
    seq[static_cast<size_t>(i)] = i;
    slot[static_cast<size_t>(i)] =
        static_cast<int64_t>(tables[static_cast<size_t>(i)].back()) * kBlock + (n_ctx - 1) % kBlock;
    ab.block_tables.push_back(tables[static_cast<size_t>(i)].data());
    ab.n_blocks.push_back(blocks_per_seq);
  }
  ab.pos = pos.data();
  ab.seq = seq.data();
  ab.slot = slot.data();
  KvLayerView kv;
  kv.k = k.data();
  kv.v = v.data();
  kv.type = TensorType::F16;
  kv.n_blocks = n_blocks;
  kv.block_size = kBlock;
  kv.n_head_kv = kHeadsKv;
  kv.head_dim = kHeadDim;
  AttentionParams p;
  p.n_head = kHeads;
  p.n_head_kv = kHeadsKv;
  p.head_dim = kHeadDim;
  p.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  static std::unique_ptr<Backend> backend = make_cpu_backend(bench_threads());
  for (auto _ : state) {
    backend->attention(q.data(), kv, ab, p, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  const double kv_bytes = 2.0 * static_cast<double>(n_seq) * n_ctx * kHeadsKv * kHeadDim * sizeof(uint16_t);
  state.counters["GB/s"] = benchmark::Counter(kv_bytes * static_cast<double>(state.iterations()) / 1e9,
                                              benchmark::Counter::kIsRate);
  state.counters["seq/s"] = benchmark::Counter(
      static_cast<double>(n_seq) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

BENCHMARK(BM_AttentionDecode)
    ->ArgsProduct({{1, 16, 64}, {192, 1024}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace strata

BENCHMARK_MAIN();
