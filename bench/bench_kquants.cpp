// K-quant matmul micro-benchmarks (Q2_K..Q6_K weights, Q8_K activations) through the model's
// matmul path (pack_matrix + matmul, 2 threads by default). Counters (rates, per second):
//   GB:  weight bytes read — the figure of merit of GEMV (1 token, decode), to compare with the
//        machine's read bandwidth (core/memory_bandwidth.h);
//   GOP: 2 * n_in * n_out * tokens operations — the figure of merit of GEMM (512 tokens, prefill).
// Shapes n_out x n_in: 2048 x 2048 (attention q/o of TinyLlama-1.1B) and 5632 x 2048 (gate/up).
// Run: bench_kquants --benchmark_format=json; STRATA_ISA=avx2|scalar forces a lower kernel level,
// STRATA_BENCH_THREADS overrides the thread count.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <tuple>
#include <vector>

#include "backend/cpu/matmul.h"
#include "core/cpu_features.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

int bench_threads() {
  const char* env = std::getenv("STRATA_BENCH_THREADS");
  return env && *env ? std::atoi(env) : 2;
}

ThreadPool& pool() {
  static ThreadPool p(bench_threads());
  return p;
}

// Offsets of the fp16 super-block scales: random bytes elsewhere are valid quants/scales.
std::vector<size_t> fp16_offsets(TensorType type) {
  switch (type) {
    case TensorType::Q2_K:
      return {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)};
    case TensorType::Q3_K:
      return {offsetof(BlockQ3_K, d)};
    case TensorType::Q4_K:
      return {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)};
    case TensorType::Q5_K:
      return {offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)};
    default:
      return {offsetof(BlockQ6_K, d)};
  }
}

// A weight matrix of random blocks with small finite scales (timing does not depend on values).
struct Weights {
  std::vector<uint8_t> data;
  std::unique_ptr<PackedMatrix> packed;
};

const Weights& weights(TensorType type, int64_t n_out, int64_t n_in) {
  static std::vector<std::unique_ptr<Weights>> cache;
  static std::vector<std::tuple<TensorType, int64_t, int64_t>> keys;
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == std::make_tuple(type, n_out, n_in)) return *cache[i];
  auto w = std::make_unique<Weights>();
  const size_t block_bytes = type_traits(type).block_bytes;
  w->data.resize(row_bytes(type, n_in) * static_cast<size_t>(n_out));
  std::mt19937_64 rng(42);
  for (size_t i = 0; i < w->data.size(); i += 8) {
    const uint64_t r = rng();
    std::memcpy(w->data.data() + i, &r, std::min<size_t>(8, w->data.size() - i));
  }
  for (size_t b = 0; b < w->data.size() / block_bytes; ++b)
    for (size_t off : fp16_offsets(type)) {
      const fp16_t h = f32_to_fp16(0.001f * static_cast<float>(1 + rng() % 16));
      std::memcpy(w->data.data() + b * block_bytes + off, &h, sizeof(h));
    }
  w->packed = pack_matrix(type, n_in, n_out, w->data.data());
  keys.emplace_back(type, n_out, n_in);
  cache.push_back(std::move(w));
  return *cache.back();
}

void run_matmul(benchmark::State& state, TensorType type, int64_t n_tokens) {
  const int64_t n_out = state.range(0), n_in = state.range(1);
  const Weights& w = weights(type, n_out, n_in);
  std::vector<float> x(static_cast<size_t>(n_tokens * n_in)), y(static_cast<size_t>(n_tokens * n_out));
  std::mt19937 rng(7);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  for (float& v : x) v = gauss(rng);
  for (auto _ : state) {
    matmul(pool(), *w.packed, x.data(), y.data(), n_tokens);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["GB"] = benchmark::Counter(static_cast<double>(w.packed->weight_bytes()) * iters / 1e9,
                                            benchmark::Counter::kIsRate);
  state.counters["GOP"] =
      benchmark::Counter(2.0 * n_in * n_out * n_tokens * iters / 1e9, benchmark::Counter::kIsRate);
  state.counters["threads"] = pool().size();
  state.SetLabel(isa_name(isa_level()));
}

template <TensorType T>
void BM_KQuantGemv(benchmark::State& state) {
  run_matmul(state, T, 1);
}

template <TensorType T>
void BM_KQuantGemm(benchmark::State& state) {
  run_matmul(state, T, 512);
}

#define STRATA_KQUANT_BENCH(T)                                                                    \
  BENCHMARK(BM_KQuantGemv<TensorType::T>)->Args({2048, 2048})->Args({5632, 2048})->UseRealTime(); \
  BENCHMARK(BM_KQuantGemm<TensorType::T>)                                                         \
      ->Args({2048, 2048})                                                                        \
      ->Args({5632, 2048})                                                                        \
      ->UseRealTime()                                                                             \
      ->Unit(benchmark::kMillisecond)

STRATA_KQUANT_BENCH(Q2_K);
STRATA_KQUANT_BENCH(Q3_K);
STRATA_KQUANT_BENCH(Q4_K);
STRATA_KQUANT_BENCH(Q5_K);
STRATA_KQUANT_BENCH(Q6_K);

}  // namespace
}  // namespace strata::cpu

BENCHMARK_MAIN();
