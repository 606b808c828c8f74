// K-quant and IQ matmul micro-benchmarks (Q2_K..Q6_K, the IQ / ternary types with Q8_K
// activations; IQ4_NL and MXFP4 with Q8_0 activations) through the model's
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
    case TensorType::Q6_K:
      return {offsetof(BlockQ6_K, d)};
    case TensorType::TQ1_0:
      return {offsetof(BlockTQ1_0, d)};
    case TensorType::TQ2_0:
      return {offsetof(BlockTQ2_0, d)};
    case TensorType::IQ1_M:
    case TensorType::MXFP4:
      return {};  // scales set by fix_special_scales
    default:
      return {0};  // the other IQ types start with their fp16 d
  }
}

// IQ1_M's fp16 scale lives in the top nibbles of its scales, MXFP4's is an E8M0 exponent.
void fix_special_scales(TensorType type, uint8_t* blk) {
  if (type == TensorType::MXFP4) blk[offsetof(BlockMXFP4, e)] = 120;
  if (type == TensorType::IQ1_M) {
    uint8_t* sc = blk + offsetof(BlockIQ1_M, scales);  // fp16 0x1400 (about 0.001), nibble by nibble
    for (int i = 0; i < 4; ++i)
      sc[2 * i + 1] = static_cast<uint8_t>((sc[2 * i + 1] & 0x0F) | ((0x1400 >> (4 * i)) & 0xF) << 4);
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
  for (size_t b = 0; b < w->data.size() / block_bytes; ++b)
    fix_special_scales(type, w->data.data() + b * block_bytes);
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
STRATA_KQUANT_BENCH(IQ4_XS);
STRATA_KQUANT_BENCH(IQ4_NL);
STRATA_KQUANT_BENCH(MXFP4);
STRATA_KQUANT_BENCH(IQ3_S);
STRATA_KQUANT_BENCH(IQ3_XXS);
STRATA_KQUANT_BENCH(IQ2_S);
STRATA_KQUANT_BENCH(IQ2_XS);
STRATA_KQUANT_BENCH(IQ2_XXS);
STRATA_KQUANT_BENCH(IQ1_M);
STRATA_KQUANT_BENCH(IQ1_S);
STRATA_KQUANT_BENCH(TQ2_0);
STRATA_KQUANT_BENCH(TQ1_0);

}  // namespace
}  // namespace strata::cpu

BENCHMARK_MAIN();
