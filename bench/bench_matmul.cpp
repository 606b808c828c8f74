// Matmul micro-benchmarks on the TinyLlama-1.1B shapes (per layer: q 2048x2048, k and v 256x2048,
// o 2048x2048, gate and up 5632x2048, down 2048x5632; 22 layers; output 32000x2048), for Q4_0,
// Q8_0 and F16 (GEMV and decode also IQ4_XS, IQ4_NL, Q4_K, Q5_K, Q6_K) with the thread count of
// STRATA_BENCH_THREADS (default 2).
//
//   bench_matmul --benchmark_format=json
//
// Counters: GB/s of weights streamed (GEMV, whole-model decode), GOP/s (2 ops per multiply-add;
// GEMM, prefill), tok/s of the whole model's matmuls (decode: one token through all 155
// matrices; prefill: 512-token batches), the machine's read bandwidth and the decode's fraction
// of it (of_bw), and the int8 and f32 peaks of the kernels' ISA level (core/compute_peak.h) with
// every GEMM / GEMV's fraction of the one its type computes with (of_peak: int8 for the
// quantized types, f32 for F16). Labels name the level that ran. GEMV rotates over copies of the
// matrix totalling > 256 MiB so that weights come from DRAM as in a real decode, not from the
// 32 MiB L3.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/cpu/w8a8_kernels.h"
#include "backend/cpu/w8a8_matrix.h"
#include "core/compute_peak.h"
#include "core/cpu_features.h"
#include "core/fp16.h"
#include "core/memory_bandwidth.h"
#include "core/tensor_type.h"
#include "core/thread_pool.h"
#include "quant/blocks.h"

namespace strata::bench {
namespace {

struct Shape {
  const char* name;
  int64_t n_out, n_in;
};

constexpr Shape kLayerShapes[] = {{"q", 2048, 2048},   {"k", 256, 2048},     {"v", 256, 2048},
                                  {"o", 2048, 2048},   {"gate", 5632, 2048}, {"up", 5632, 2048},
                                  {"down", 2048, 5632}};
constexpr Shape kOutputShape = {"output", 32000, 2048};
constexpr int kLayers = 22;
constexpr int64_t kPrefillTokens = 512;
constexpr size_t kGemvWorkingSet = size_t{256} << 20;

int bench_threads() {
  const char* env = std::getenv("STRATA_BENCH_THREADS");
  return env ? std::atoi(env) : 2;
}

ThreadPool& pool() {
  static ThreadPool p(bench_threads());
  return p;
}

// Cheap deterministic bytes (values do not change the speed of the kernels).
uint64_t next_random(uint64_t& s) {
  s ^= s << 13, s ^= s >> 7, s ^= s << 17;
  return s;
}

// Offsets in a block of `type` of its fp16 scales: Q4_0, Q8_0, IQ4_NL and IQ4_XS start with d,
// Q4_K / Q5_K with d and dmin, Q6_K ends with d.
std::vector<size_t> fp16_offsets(TensorType type) {
  switch (type) {
    case TensorType::Q4_K:
      return {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)};
    case TensorType::Q5_K:
      return {offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)};
    case TensorType::Q6_K:
      return {offsetof(BlockQ6_K, d)};
    default:
      return {0};
  }
}

// Random rows of `type` with finite scales (fp16_offsets).
std::vector<uint8_t> random_weights(TensorType type, int64_t n_out, int64_t n_in, uint64_t seed) {
  std::vector<uint8_t> w(row_bytes(type, n_in) * static_cast<size_t>(n_out));
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i + 8 <= w.size(); i += 8) {
    const uint64_t r = next_random(s);
    std::memcpy(w.data() + i, &r, 8);
  }
  if (type == TensorType::F16) {  // halves in +-[0.5, 1)
    for (size_t i = 0; i + 2 <= w.size(); i += 2) {
      uint16_t h;
      std::memcpy(&h, w.data() + i, 2);
      h = static_cast<uint16_t>((h & 0x83ffu) | 0x3800u);
      std::memcpy(w.data() + i, &h, 2);
    }
    return w;
  }
  const size_t block = type_traits(type).block_bytes;
  const fp16_t d = f32_to_fp16(0.01f);
  for (size_t i = 0; i + block <= w.size(); i += block)
    for (size_t off : fp16_offsets(type)) std::memcpy(w.data() + i + off, &d, 2);
  return w;
}

// A matrix ready for matmul, with the source rows kept when the layout views them.
struct Matrix {
  std::vector<uint8_t> source;
  std::unique_ptr<cpu::PackedMatrix> packed;
};

Matrix make_matrix(TensorType type, const Shape& s, uint64_t seed) {
  Matrix m;
  m.source = random_weights(type, s.n_out, s.n_in, seed);
  m.packed = cpu::pack_matrix(type, s.n_in, s.n_out, m.source.data());
  if (m.packed->owned_bytes() > 0) std::vector<uint8_t>().swap(m.source);  // the copy is all we need
  return m;
}

constexpr int64_t kNumTypes = 8;  // type_arg's

TensorType type_arg(int64_t i) {
  constexpr TensorType kTypes[] = {TensorType::Q4_0,   TensorType::Q8_0, TensorType::F16,  TensorType::IQ4_XS,
                                   TensorType::IQ4_NL, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};
  return kTypes[i];
}

const Shape& shape_arg(int64_t i) {
  return i < 7 ? kLayerShapes[i] : kOutputShape;
}

// "<type> <what> <layout> <level of the kernels that ran> <threads>t".
void set_label(benchmark::State& state, const cpu::PackedMatrix& w, const std::string& what) {
  state.SetLabel(std::string(type_name(w.type())) + " " + what + " " +
                 (w.interleaved() ? "interleaved " : "rows ") + isa_name(cpu::matmul_kernel_level(w)) + " " +
                 std::to_string(pool().size()) + "t");
}

double machine_bandwidth() {
  static const double bw = measure_read_bandwidth(pool()).bytes_per_second;
  return bw;
}

const ComputePeak& compute_peak() {
  static const ComputePeak p = measure_compute_peak(pool(), isa_level());
  return p;
}

// The peak (ops/s) the kernels of `type` are bound by: f32 multiply-adds for the float types,
// int8 dot products for the quantized ones (0 where the level has no peak kernel).
double type_peak(TensorType type) {
  const bool float_type = type == TensorType::F32 || type == TensorType::F16 || type == TensorType::BF16;
  return float_type ? compute_peak().f32_flops : compute_peak().int8_ops_per_second;
}

// Wall seconds since t0 (the fractions below are plain numbers, not Google Benchmark rates,
// which would print as "/s").
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// of_peak: `ops` per iteration over the timed loop's `seconds`, as a fraction of the type's peak.
void set_peak_fraction(benchmark::State& state, TensorType type, double ops, double seconds) {
  const double peak = type_peak(type);
  if (peak > 0.0 && seconds > 0.0)
    state.counters["of_peak"] = ops * static_cast<double>(state.iterations()) / seconds / peak;
}

// of_bw: `bytes` per iteration over the timed loop's `seconds`, as a fraction of the machine's
// read bandwidth.
void set_bandwidth_fraction(benchmark::State& state, double bytes, double seconds) {
  if (seconds > 0.0)
    state.counters["of_bw"] = bytes * static_cast<double>(state.iterations()) / seconds / machine_bandwidth();
}

void BM_Gemv(benchmark::State& state) {
  const TensorType type = type_arg(state.range(0));
  const Shape& s = shape_arg(state.range(1));
  const size_t bytes = row_bytes(type, s.n_in) * static_cast<size_t>(s.n_out);
  const size_t copies = std::max<size_t>(1, kGemvWorkingSet / bytes);
  std::vector<Matrix> mats;
  for (size_t i = 0; i < copies; ++i) mats.push_back(make_matrix(type, s, i + 1));
  std::vector<float> x(static_cast<size_t>(s.n_in), 0.5f), y(static_cast<size_t>(s.n_out));
  size_t i = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    cpu::matmul(pool(), *mats[i].packed, x.data(), y.data(), 1);
    benchmark::DoNotOptimize(y.data());
    i = (i + 1) % copies;
  }
  const double secs = seconds_since(t0);
  state.counters["GB/s"] =
      benchmark::Counter(static_cast<double>(bytes) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  set_bandwidth_fraction(state, static_cast<double>(bytes), secs);
  set_peak_fraction(state, type, 2.0 * static_cast<double>(s.n_in * s.n_out), secs);
  set_label(state, *mats[0].packed, std::string(s.name) + " gemv");
}

// One-token GEMV from cache: 256 rows of 2048 (under 0.3 MB in the 4-bit types, so each
// thread's half stays in its L2) run again and again. Its GB/s is the kernel's own ceiling with
// memory out of the way: decode reaches its roofline only where this is well above the machine's
// read bandwidth (BM_DecodeRoofline).
void BM_GemvInCache(benchmark::State& state) {
  const TensorType type = type_arg(state.range(0));
  const Shape s{"in-cache", 256, 2048};  // n_out, n_in
  const Matrix m = make_matrix(type, s, 3);
  const size_t bytes = m.packed->weight_bytes();
  std::vector<float> x(static_cast<size_t>(s.n_in), 0.5f), y(static_cast<size_t>(s.n_out));
  for (auto _ : state) {
    cpu::matmul(pool(), *m.packed, x.data(), y.data(), 1);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GB/s"] =
      benchmark::Counter(static_cast<double>(bytes) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  set_label(state, *m.packed, "256 x 2048 gemv from cache");
}

void BM_Gemm(benchmark::State& state) {
  const TensorType type = type_arg(state.range(0));
  const Shape& s = shape_arg(state.range(1));
  const int64_t n_tokens = state.range(2);
  Matrix m = make_matrix(type, s, 7);
  std::vector<float> x(static_cast<size_t>(s.n_in * n_tokens)), y(static_cast<size_t>(s.n_out * n_tokens));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 17) * 0.1f - 0.8f;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    cpu::matmul(pool(), *m.packed, x.data(), y.data(), n_tokens);
    benchmark::DoNotOptimize(y.data());
  }
  const double secs = seconds_since(t0);
  const double ops = 2.0 * static_cast<double>(s.n_in * s.n_out * n_tokens);
  state.counters["GOP/s"] = benchmark::Counter(ops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  set_peak_fraction(state, type, ops, secs);
  set_label(state, *m.packed, std::string(s.name) + " gemm " + std::to_string(n_tokens) + " tokens");
}

// W8A8 (backend/cpu/w8a8_matrix.h) with dynamic per-token activation scales: GEMM (prefill) and
// GEMV (decode, over copies as BM_Gemv) with their fraction of the int8 peak.
std::unique_ptr<cpu::W8A8Matrix> make_w8a8(const Shape& s, uint64_t seed) {
  std::vector<float> w(static_cast<size_t>(s.n_in * s.n_out));
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<float>((i * 2654435761u + seed) % 255) * 0.01f - 1.27f;
  return cpu::W8A8Matrix::pack(&pool(), w.data(), s.n_in, s.n_out, {});
}

void BM_W8A8Gemm(benchmark::State& state) {
  const Shape& s = shape_arg(state.range(0));
  const int64_t n_tokens = state.range(1);
  const auto m = make_w8a8(s, 7);
  std::vector<float> x(static_cast<size_t>(s.n_in * n_tokens)), y(static_cast<size_t>(s.n_out * n_tokens));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 17) * 0.1f - 0.8f;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    cpu::w8a8_matmul(pool(), *m, x.data(), y.data(), n_tokens);
    benchmark::DoNotOptimize(y.data());
  }
  const double secs = seconds_since(t0);
  const double ops = 2.0 * static_cast<double>(s.n_in * s.n_out * n_tokens);
  state.counters["GOP/s"] = benchmark::Counter(ops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  set_peak_fraction(state, TensorType::Q8_0, ops, secs);  // the int8 peak
  state.SetLabel(std::string(s.name) + " w8a8 gemm " + std::to_string(n_tokens) + " tokens, " +
                 isa_name(cpu::w8a8_kernels(isa_level()).level));
}

void BM_W8A8Gemv(benchmark::State& state) {
  const Shape& s = shape_arg(state.range(0));
  const size_t bytes = static_cast<size_t>(s.n_in * s.n_out);
  const size_t copies = std::max<size_t>(1, kGemvWorkingSet / bytes);
  std::vector<std::unique_ptr<cpu::W8A8Matrix>> mats;
  for (size_t i = 0; i < copies; ++i) mats.push_back(make_w8a8(s, i + 1));
  std::vector<float> x(static_cast<size_t>(s.n_in), 0.5f), y(static_cast<size_t>(s.n_out));
  size_t i = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    cpu::w8a8_matmul(pool(), *mats[i], x.data(), y.data(), 1);
    benchmark::DoNotOptimize(y.data());
    i = (i + 1) % copies;
  }
  const double secs = seconds_since(t0);
  state.counters["GB/s"] =
      benchmark::Counter(static_cast<double>(bytes) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  set_bandwidth_fraction(state, static_cast<double>(bytes), secs);
  state.SetLabel(std::string(s.name) + " w8a8 gemv, " + isa_name(cpu::w8a8_kernels(isa_level()).level));
}

void w8a8_args(benchmark::internal::Benchmark* b) {
  for (int64_t s : {0, 1, 4, 6}) b->Args({s, kPrefillTokens});
}

// All 155 matrices of the model (distinct weights, as in a real forward pass).
struct Model {
  TensorType type = TensorType::F32;
  std::vector<Matrix> mats;
  size_t bytes = 0;
  double ops_per_token = 0.0;
};

Model& model(TensorType type) {
  static Model m;
  if (m.type == type && !m.mats.empty()) return m;
  m = Model{};  // release the previous type's weights first
  m.type = type;
  uint64_t seed = 100;
  for (int l = 0; l < kLayers; ++l)
    for (const Shape& s : kLayerShapes) m.mats.push_back(make_matrix(type, s, seed++));
  m.mats.push_back(make_matrix(type, kOutputShape, seed));
  for (const Matrix& mat : m.mats) {
    m.bytes += mat.packed->weight_bytes();
    m.ops_per_token += 2.0 * static_cast<double>(mat.packed->n_in() * mat.packed->n_out());
  }
  return m;
}

void forward(const Model& m, const float* x, float* y, int64_t n_tokens) {
  for (const Matrix& mat : m.mats) cpu::matmul(pool(), *mat.packed, x, y, n_tokens);
}

void BM_ModelDecode(benchmark::State& state) {
  const TensorType type = type_arg(state.range(0));
  const double bandwidth = machine_bandwidth();
  const Model& m = model(type);
  std::vector<float> x(5632, 0.25f), y(32000);
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    forward(m, x.data(), y.data(), 1);
    benchmark::DoNotOptimize(y.data());
  }
  const double secs = seconds_since(t0);
  state.counters["tok/s"] = benchmark::Counter(1.0, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/s"] =
      benchmark::Counter(static_cast<double>(m.bytes) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["roofline_tok/s"] = bandwidth / static_cast<double>(m.bytes);
  set_bandwidth_fraction(state, static_cast<double>(m.bytes), secs);
  set_peak_fraction(state, type, m.ops_per_token, secs);
  state.counters["weights_GB"] = static_cast<double>(m.bytes) / 1e9;
  set_label(state, *m.mats[0].packed, "tinyllama-1.1b decode");
}

// Decode against its roofline on a host whose read bandwidth moves between seconds: read passes
// and decode tokens alternate (read, token, read, token, …, read), and each token's GB/s is
// divided by the mean of the two passes beside it. Reports the median of those ratios (of_bw)
// with the lowest and highest, and the medians of both rates.
void BM_DecodeRoofline(benchmark::State& state) {
  const TensorType type = type_arg(state.range(0));
  const int pairs = static_cast<int>(state.range(1));
  const Model& m = model(type);
  ReadBandwidthProbe probe(pool());
  std::vector<float> x(5632, 0.25f), y(32000);
  forward(m, x.data(), y.data(), 1);  // warm-up
  std::vector<double> ratio, decode_bw, read_bw;
  for (auto _ : state) {
    double before = probe.pass();
    for (int i = 0; i < pairs; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      forward(m, x.data(), y.data(), 1);
      benchmark::DoNotOptimize(y.data());
      const double dec = static_cast<double>(m.bytes) / seconds_since(t0);
      const double after = probe.pass();
      ratio.push_back(dec / (0.5 * (before + after)));
      decode_bw.push_back(dec);
      read_bw.push_back(after);
      before = after;
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  state.counters["of_bw"] = median(ratio);
  state.counters["of_bw_min"] = *std::min_element(ratio.begin(), ratio.end());
  state.counters["of_bw_max"] = *std::max_element(ratio.begin(), ratio.end());
  state.counters["GB/s"] = median(decode_bw) / 1e9;
  state.counters["read_GB/s"] = median(read_bw) / 1e9;
  set_label(state, *m.mats[0].packed, "tinyllama-1.1b decode vs adjacent read passes");
}

// The whole model's matrices at n tokens: prefill (512) or one step of batched decode (16
// sequences), where each step streams the weights from memory once.
void model_tokens(benchmark::State& state, int64_t n) {
  const TensorType type = type_arg(state.range(0));
  const Model& m = model(type);
  std::vector<float> x(static_cast<size_t>(5632 * n)), y(static_cast<size_t>(32000 * n));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 13) * 0.1f - 0.6f;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    forward(m, x.data(), y.data(), n);
    benchmark::DoNotOptimize(y.data());
  }
  const double secs = seconds_since(t0);
  state.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GOP/s"] = benchmark::Counter(m.ops_per_token * static_cast<double>(n) / 1e9,
                                               benchmark::Counter::kIsIterationInvariantRate);
  set_peak_fraction(state, type, m.ops_per_token * static_cast<double>(n), secs);
  set_label(state, *m.mats[0].packed, "tinyllama-1.1b, " + std::to_string(n) + " tokens");
}
void BM_ModelPrefill(benchmark::State& state) {
  model_tokens(state, kPrefillTokens);
}
void BM_ModelBatchedDecode(benchmark::State& state) {
  model_tokens(state, 16);
}

void BM_ReadBandwidth(benchmark::State& state) {
  BandwidthResult r;
  for (auto _ : state) r = measure_read_bandwidth(pool());
  state.counters["GB/s"] = r.bytes_per_second / 1e9;
  state.SetLabel(std::to_string(r.threads) + "t, " + std::to_string(r.bytes >> 20) + " MiB, best of " +
                 std::to_string(r.passes));
}

// The int8 and f32 peaks of the kernels' level (core/compute_peak.h): the one measurement the
// of_peak fractions of this run divide by.
void BM_ComputePeak(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(&compute_peak());
  const ComputePeak& p = compute_peak();
  if (p.int8_ops_per_second == 0.0 && p.f32_flops == 0.0) {
    state.SkipWithError(("no peak kernels at level " + isa_name(p.level)).c_str());
    return;
  }
  state.counters["int8_GOP/s"] = p.int8_ops_per_second / 1e9;
  state.counters["f32_GFLOP/s"] = p.f32_flops / 1e9;
  state.SetLabel(isa_name(p.level) + ": int8 " + (p.int8_what.empty() ? "none" : p.int8_what) + ", f32 " +
                 p.f32_what + ", " + std::to_string(p.threads) + "t");
}

// The cost of one pool dispatch (decode makes ~155 matmul calls per token).
void BM_PoolRun(benchmark::State& state) {
  std::atomic<int> sink{0};
  for (auto _ : state) pool().run([&](int ith, int) { sink.fetch_add(ith, std::memory_order_relaxed); });
  state.SetLabel(std::to_string(pool().size()) + "t empty run()");
}

void gemv_args(benchmark::internal::Benchmark* b) {
  for (int64_t t = 0; t < kNumTypes; ++t)
    for (int64_t s : {0, 1, 4, 6, 7}) b->Args({t, s});  // q, k, gate, down, output
}

void gemm_args(benchmark::internal::Benchmark* b) {
  for (int64_t t = 0; t < 5; ++t)
    for (int64_t s : {0, 1, 4, 6}) b->Args({t, s, kPrefillTokens});
  // Batched decode: a few tokens per step from as many sequences (the serving engine's shape).
  for (int64_t t = 0; t < 2; ++t)
    for (int64_t n : {16, 32, 64, 128}) b->Args({t, 4, n});
  // Few tokens (a speculative draft or verification step): where the AMX tile starts to pay
  // against the AVX-512 one at the interleaved layout.
  for (int64_t t = 0; t < 2; ++t)
    for (int64_t n : {1, 2, 3, 4, 6, 8, 12}) b->Args({t, 4, n});
}

BENCHMARK(BM_ReadBandwidth)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_PoolRun)->UseRealTime();
BENCHMARK(BM_ComputePeak)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_Gemv)->Apply(gemv_args)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_GemvInCache)->DenseRange(0, kNumTypes - 1)->UseRealTime();
BENCHMARK(BM_Gemm)->Apply(gemm_args)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_W8A8Gemm)->Apply(w8a8_args)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_W8A8Gemv)->DenseRange(0, 7)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_ModelDecode)->DenseRange(0, kNumTypes - 1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DecodeRoofline)
    ->ArgsProduct({benchmark::CreateDenseRange(0, kNumTypes - 1, 1), {25}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);
BENCHMARK(BM_ModelPrefill)
    ->Arg(0)
    ->Arg(1)
    ->Arg(3)
    ->Arg(4)
    ->Arg(5)
    ->Arg(7)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(2);
BENCHMARK(BM_ModelBatchedDecode)
    ->Arg(0)
    ->Arg(1)
    ->Arg(5)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(5);

}  // namespace
}  // namespace strata::bench

BENCHMARK_MAIN();
