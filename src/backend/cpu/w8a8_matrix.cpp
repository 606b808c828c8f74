// W8A8 packing, activation quantization and the matmul driver (w8a8_matrix.h).
#include "backend/cpu/w8a8_matrix.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>

#include "backend/cpu/w8a8_kernels.h"
#include "core/check.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"

namespace strata::cpu {
namespace {

// Weight bytes a work item keeps in L2 while its token tiles pass over them (as matmul.cpp).
constexpr size_t kL2WeightBudget = 768 * 1024;
// Below this many weight bytes x tokens a call runs on the calling thread alone.
constexpr size_t kSerialWork = 32 * 1024;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Quantizes rows [16 g, 16 g + 16) of w into group g (zero rows past n_out).
void pack_group(const float* w, int64_t n_in, int64_t n_out, int64_t kp, int64_t g, uint8_t* dst,
                float* scales) {
  for (int r = 0; r < kW8A8Rows; ++r) {
    const int64_t o = g * kW8A8Rows + r;
    float amax = 0.0f;
    const float* row = o < n_out ? w + o * n_in : nullptr;
    if (row)
      for (int64_t k = 0; k < n_in; ++k) amax = std::max(amax, std::fabs(row[k]));
    const float d = amax / 127.0f;
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    scales[r] = d;
    for (int64_t k = 0; k < kp; ++k) {
      const float q = row && k < n_in ? std::clamp(std::nearbyint(row[k] * id), -127.0f, 127.0f) : 0.0f;
      dst[(k / 4) * 64 + r * 4 + k % 4] = static_cast<uint8_t>(static_cast<int>(q) + 128);
    }
  }
}

// Per-thread activation scratch; steady-state calls do not allocate.
struct ActScratch {
  std::vector<int8_t> qs;
  std::vector<int32_t> sum;
  std::vector<float> scale;
};
thread_local ActScratch t_act;

}  // namespace

std::unique_ptr<W8A8Matrix> W8A8Matrix::pack(ThreadPool* pool, const float* w, int64_t n_in, int64_t n_out,
                                             W8A8ActQuant act) {
  if (n_in <= 0 || n_out <= 0) STRATA_THROW("W8A8 matrix of ", n_out, " x ", n_in, " elements has no data");
  if (n_in > kW8A8MaxK)
    STRATA_THROW("W8A8 supports rows of at most ", kW8A8MaxK, " elements (int32 sums), got ", n_in);
  if (!std::isfinite(act.static_absmax) || act.static_absmax < 0.0f)
    STRATA_THROW("W8A8 static activation absmax must be finite and >= 0, got ", act.static_absmax);
  STRATA_CHECK(w != nullptr);
  for (int64_t i = 0; i < n_in * n_out; ++i)
    if (!std::isfinite(w[i])) STRATA_THROW("W8A8: non-finite weight at element ", i);
  std::unique_ptr<W8A8Matrix> m(new W8A8Matrix());
  m->n_in_ = n_in;
  m->n_out_ = n_out;
  m->kp_ = ceil_div(n_in, 4) * 4;
  m->n_groups_ = ceil_div(n_out, kW8A8Rows);
  m->act_ = act;
  const size_t bytes = m->group_bytes() * static_cast<size_t>(m->n_groups_);
  m->data_ = WeightMemory(bytes);
  m->scales_.assign(static_cast<size_t>(m->n_groups_) * kW8A8Rows, 0.0f);
  W8A8Matrix& mr = *m;
  auto body = [&](int ith, int nth) {
    for (int64_t g = mr.n_groups_ * ith / nth; g < mr.n_groups_ * (ith + 1) / nth; ++g)
      pack_group(w, n_in, n_out, mr.kp_, g, mr.data_.data() + static_cast<size_t>(g) * mr.group_bytes(),
                 mr.scales_.data() + g * kW8A8Rows);
  };
  if (pool && pool->size() > 1)
    pool->run(body);
  else
    body(0, 1);
  return m;
}

void w8a8_matmul(ThreadPool& pool, const W8A8Matrix& w, const float* x, float* y, int64_t n_tokens) {
  STRATA_CHECK(n_tokens >= 0);
  if (n_tokens == 0) return;
  const W8A8KernelSet& kernels = w8a8_kernels(isa_level());
  const W8A8GemmFn gemm = kernels.gemm;
  const int64_t n_in = w.n_in(), n_out = w.n_out(), kp = w.kp(), n_groups = w.n_groups();
  ActScratch& s = t_act;
  s.qs.resize(static_cast<size_t>(n_tokens * kp));
  s.sum.resize(static_cast<size_t>(n_tokens));
  s.scale.resize(static_cast<size_t>(n_tokens));
  const bool serial = w.weight_bytes() * static_cast<size_t>(n_tokens) < kSerialWork || pool.size() == 1;
  auto quantize = [&](int ith, int nth) {
    for (int64_t t = n_tokens * ith / nth; t < n_tokens * (ith + 1) / nth; ++t)
      s.scale[static_cast<size_t>(t)] = kernels.quantize(x + t * n_in, n_in, kp, w.act().static_absmax,
                                                         s.qs.data() + t * kp, s.sum.data() + t);
  };
  if (serial || n_tokens < 2 * pool.size())
    quantize(0, 1);
  else
    pool.run(quantize);

  // Work items: chunks of groups (within the L2 budget, and enough of them to balance decode)
  // x panels of token tiles; inside an item the tiles are outer so the chunk stays in cache.
  const int nth = serial ? 1 : pool.size();
  const int64_t n_tiles = ceil_div(n_tokens, kW8A8Cols);
  const int64_t budget = std::max<int64_t>(1, static_cast<int64_t>(kL2WeightBudget / w.group_bytes()));
  const int64_t chunk = std::max<int64_t>(1, std::min(budget, ceil_div(n_groups, 4 * nth)));
  const int64_t n_chunks = ceil_div(n_groups, chunk);
  const int64_t n_panels = std::min(n_tiles, std::max<int64_t>(1, ceil_div(2 * nth, n_chunks)));
  std::atomic<int64_t> next{0};
  auto multiply = [&](int, int) {
    for (int64_t item = next.fetch_add(1); item < n_chunks * n_panels; item = next.fetch_add(1)) {
      const int64_t c = item / n_panels, p = item % n_panels;
      const int64_t g0 = c * chunk, g1 = std::min(n_groups, g0 + chunk);
      for (int64_t t = n_tiles * p / n_panels; t < n_tiles * (p + 1) / n_panels; ++t) {
        const int64_t t0 = t * kW8A8Cols;
        const int nc = static_cast<int>(std::min<int64_t>(kW8A8Cols, n_tokens - t0));
        const W8A8ActTile a{s.qs.data() + t0 * kp, static_cast<size_t>(kp), s.sum.data() + t0,
                            s.scale.data() + t0};
        for (int64_t g = g0; g < g1; ++g) {
          const int n_rows = static_cast<int>(std::min<int64_t>(kW8A8Rows, n_out - g * kW8A8Rows));
          gemm(w.group(g), kp, w.group_scales(g), a, nc, y + t0 * n_out + g * kW8A8Rows,
               static_cast<size_t>(n_out), n_rows);
        }
      }
    }
  };
  if (serial)
    multiply(0, 1);
  else
    pool.run(multiply);
}

}  // namespace strata::cpu
