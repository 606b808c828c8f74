// Quantizer speed of the 1-3-bit IQ types (IQ3_S, IQ3_XXS, IQ2_S, IQ2_XS, IQ2_XXS, IQ1_M, IQ1_S)
// and, for scale, IQ4_XS and Q2_K: one thread, quantize_row over 64 super-blocks of Gaussian
// weights with an importance vector (the 1-3-bit types are used with an imatrix, as in
// llama.cpp). Counter Mw: millions of weights quantized per second (3.4M weights at R Mw/s take
// 3.4 / R s). Run: bench_iq_quantize --benchmark_format=json.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "quant/quantize.h"

namespace strata::quant {
namespace {

constexpr int64_t kWeights = 64 * 256;

void BM_Quantize(benchmark::State& state, TensorType type) {
  std::mt19937 rng(11);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::uniform_real_distribution<float> imp(0.1f, 4.0f);
  std::vector<float> x(kWeights), importance(kWeights);
  for (float& v : x) v = gauss(rng);
  for (float& v : importance) v = imp(rng);
  std::vector<uint8_t> out(kWeights * 4);
  for (auto _ : state) {
    quantize_row(type, x.data(), out.data(), kWeights, importance.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["Mw"] = benchmark::Counter(static_cast<double>(kWeights) * state.iterations() / 1e6,
                                            benchmark::Counter::kIsRate);
}

BENCHMARK_CAPTURE(BM_Quantize, IQ3_S, TensorType::IQ3_S)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Quantize, IQ3_XXS, TensorType::IQ3_XXS)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Quantize, IQ2_S, TensorType::IQ2_S)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Quantize, IQ2_XS, TensorType::IQ2_XS)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Quantize, IQ2_XXS, TensorType::IQ2_XXS)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Quantize, IQ1_M, TensorType::IQ1_M)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Quantize, IQ1_S, TensorType::IQ1_S)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Quantize, IQ4_XS, TensorType::IQ4_XS)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Quantize, Q2_K, TensorType::Q2_K)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace strata::quant

BENCHMARK_MAIN();
