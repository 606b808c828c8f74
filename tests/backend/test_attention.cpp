// Backend::store_kv + Backend::attention at every ISA level against float64 attentions written
// here from the definitions: scores q.k * scale, optional soft-capping (gemma2:
// cap * tanh(s / cap)), causal mask with an optional sliding window, softmax whose denominator
// optionally includes one sink logit per query head (gpt-oss), and the weighted sum of V. V may
// be narrower than K (head_dim_v) or be the first head_dim_v elements of the K row (MLA).
//
// For every KV type three things are checked:
//  1. the cache holds what store_kv was given: each decoded element (kv_test_decoder.h, written
//     from the format descriptions) is within its format's rounding bound of the original value
//     (rotated, for rotated keys);
//  2. the kernel equals a float64 attention over the decoded cache, with the query rotated by the
//     matrix R and, for block-quantized keys, quantized to Q8_0 / Q8_1 per llama.cpp's definition
//     (d = amax / 127 stored as fp16, q = round(x / d)); tolerance 1e-4 relative for float caches,
//     5e-3 for block-quantized keys (the Q8_1 block sums are stored as fp16, and a query element
//     within 1e-6 of a rounding tie may round the other way in float);
//  3. against the float64 attention of the unquantized K/V (the F32 cache), the output is within
//     the bound quantization allows: eps_v + max|v| * (exp(2 delta) - 1), with eps_v the largest
//     V error and delta the largest logit error of the decoded cache (a softmax whose logits move
//     by at most delta moves its probabilities' L1 norm by at most exp(2 delta) - 1).
// Q8_0 values summed in integers (kv_value_tile.h) add to checks 2 and 3 the bound of their 8-bit
// weights (weight_rounding_bounds).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "backend/backend.h"
#include "backend/cpu/kv_value_tile.h"
#include "core/cpu_features.h"
#include "core/fp16.h"
#include "kv_test_decoder.h"

namespace strata {
namespace {

std::vector<IsaLevel> levels() {
  std::vector<IsaLevel> out = {IsaLevel::Scalar};
  if (isa_supported(IsaLevel::Avx2)) out.push_back(IsaLevel::Avx2);
  if (isa_supported(IsaLevel::Avx512)) out.push_back(IsaLevel::Avx512);
  return out;
}

std::vector<float> random_vec(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

struct AttnCase {
  const char* name;
  int hd, hd_v, n_head, n_head_kv, block_size, n_ctx, n_q, window;
  float softcap;
  bool sinks, v_in_k;
  KvType k_type = KvType::F16, v_type = KvType::F16;
  bool rotate = false;
};

void PrintTo(const AttnCase& c, std::ostream* os) {
  *os << c.name;
}

bool int_keys(KvType t) {
  return !kv_type_is_float(t) && !kv_type_is_kivi(t);
}

// Keys the kernel scores against an int8 query quantized as Q8_0 keys are (the interleaved Q8_0 /
// Q4_0 tiles, kv_key_tile.h): groups of at most 16 elements by the least-squared-error scale,
// wider ones by llama.cpp's amax / 127.
bool min_error_query(KvType t) {
  return t == KvType::Q8_0 || t == KvType::Q4_0;
}

// One group x: [n] quantized to levels [-127, 127] with the fp16 scale of least squared error among
// d = v / -(127 - k / 8), k = 0..32, v the element of largest magnitude (kv_key_tile.h), in float64.
void min_error_group(const float* x, int n, double* out) {
  float v = 0;
  for (int j = 0; j < n; ++j)
    if (std::fabs(x[j]) > std::fabs(v)) v = x[j];
  double best = INFINITY, best_d = 0;
  for (int k = 0; k <= 32 && v != 0; ++k) {
    const double d = fp16_to_f32(f32_to_fp16(float(v / -(127.0 - k / 8.0))));
    double err = 0;
    for (int j = 0; j < n; ++j) {
      const double e = x[j] - d * std::clamp(std::nearbyint(x[j] / d), -127.0, 127.0);
      err += e * e;
    }
    if (err < best) best = err, best_d = d;
  }
  for (int j = 0; j < n; ++j)
    out[j] = best_d != 0 ? best_d * std::clamp(std::nearbyint(x[j] / best_d), -127.0, 127.0) : 0.0;
}

// A query row as the kernel scores it: rotated (rot: [hd][hd] or empty) and, for block-quantized
// keys, quantized per 32-element group: to Q8_0 / Q8_1 as llama.cpp's activation quantizer does,
// in float, or (min_error) as min_error_group does.
std::vector<double> effective_query(const float* q, int hd, const std::vector<double>& rot, bool quantize,
                                    bool min_error = false) {
  std::vector<float> x(q, q + hd);
  if (!rot.empty())
    for (int i = 0; i < hd; ++i) {
      double s = 0;
      for (int j = 0; j < hd; ++j) s += rot[size_t(i) * hd + j] * q[j];
      x[i] = float(s);
    }
  std::vector<double> out(x.begin(), x.end());
  if (!quantize) return out;
  for (int g = 0; g < hd; g += 32) {
    const int n = std::min(32, hd - g);
    int extent = n;  // before trailing zeros: groups of up to 16 are searched, wider ones amax / 127
    while (extent > 0 && x[g + extent - 1] == 0.0f) --extent;
    if (min_error && extent <= 16) {
      min_error_group(x.data() + g, extent, out.data() + g);
      continue;
    }
    float amax = 0;
    for (int j = 0; j < n; ++j) amax = std::max(amax, std::fabs(x[g + j]));
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    const double dh = fp16_to_f32(f32_to_fp16(d));
    for (int j = 0; j < n; ++j) out[g + j] = dh * std::nearbyint(x[g + j] * id);
  }
  return out;
}

// Float64 attention: out [n_q, n_head, hd_v] of queries qe [n_q * n_head][hd] over keys
// key(p, g, e) and values val(p, g, e) of positions 0..n_ctx-1.
template <typename Key, typename Val>
std::vector<double> attention_ref(const AttnCase& c, const std::vector<std::vector<double>>& qe, Key key,
                                  Val val, const std::vector<float>& sinks, double scale,
                                  std::vector<double>* logits) {
  const int group = c.n_head / c.n_head_kv;
  std::vector<double> out(size_t(c.n_q) * c.n_head * c.hd_v);
  for (int t = 0; t < c.n_q; ++t) {
    const int pos = c.n_ctx - c.n_q + t;
    const int lo = c.window > 0 ? std::max(0, pos - c.window + 1) : 0;
    for (int h = 0; h < c.n_head; ++h) {
      const int g = h / group;
      const std::vector<double>& q = qe[size_t(t) * c.n_head + h];
      std::vector<double> s;
      for (int p = lo; p <= pos; ++p) {
        double d = 0;
        for (int e = 0; e < c.hd; ++e) d += q[e] * key(p, g, e);
        d *= scale;
        if (c.softcap > 0) d = c.softcap * std::tanh(d / c.softcap);
        s.push_back(d);
        if (logits) logits->push_back(d);
      }
      double mx = *std::max_element(s.begin(), s.end());
      if (c.sinks) mx = std::max(mx, double(sinks[h]));
      double z = c.sinks ? std::exp(sinks[h] - mx) : 0.0;
      for (double& x : s) z += (x = std::exp(x - mx));
      for (int e = 0; e < c.hd_v; ++e) {
        double o = 0;
        for (int p = lo; p <= pos; ++p) o += s[p - lo] / z * val(p, g, e);
        out[(size_t(t) * c.n_head + h) * c.hd_v + e] = o;
      }
    }
  }
  return out;
}

// Q8_0 values summed in integers (kv_value_tile.h: the scalar and AVX-512 levels) round each
// weight p_j * d_j to 8 bits of the largest in its tile (block): token j's term moves by at most
// 0.5 / 255 * max_{j' in tile} (pi_j' * d_j') * |q_j|, pi the softmax probabilities, |q| <= 128
// and 128 * d <= vmax * 128 / 123 (amax / 127 scales; searched scales put amax at 123..128
// steps). Per output row (token, head): vmax * 128 / 123 * 0.5 / 255 * sum over tiles of (tokens
// in the tile) * (the tile's largest pi), from the logits attention_ref wrote, with 1% slack for
// the kernel's float probabilities. 0 at levels that dequantize V.
std::vector<double> weight_rounding_bounds(const AttnCase& c, const std::vector<double>& logits,
                                           const std::vector<float>& sinks, double vmax, IsaLevel isa) {
  std::vector<double> out(size_t(c.n_q) * c.n_head, 0.0);
  if (c.v_in_k || c.v_type != KvType::Q8_0 || !cpu::kv_value_tile_kernels(isa).accumulate_q8_0) return out;
  size_t at = 0;
  for (int t = 0; t < c.n_q; ++t) {
    const int pos = c.n_ctx - c.n_q + t;
    const int lo = c.window > 0 ? std::max(0, pos - c.window + 1) : 0;
    for (int h = 0; h < c.n_head; ++h) {
      const double* s = logits.data() + at;
      at += size_t(pos - lo + 1);
      double mx = *std::max_element(s, s + (pos - lo + 1));
      if (c.sinks) mx = std::max(mx, double(sinks[h]));
      double z = c.sinks ? std::exp(sinks[h] - mx) : 0.0;
      for (int p = lo; p <= pos; ++p) z += std::exp(s[p - lo] - mx);
      double sum = 0;
      for (int b0 = lo / c.block_size * c.block_size; b0 <= pos; b0 += c.block_size) {
        double pmax = 0;
        int n = 0;
        for (int p = std::max(lo, b0); p <= std::min(pos, b0 + c.block_size - 1); ++p, ++n)
          pmax = std::max(pmax, std::exp(s[p - lo] - mx) / z);
        sum += n * pmax;
      }
      out[size_t(t) * c.n_head + h] = 1.01 * vmax * 128.0 / 123.0 * 0.5 / 255.0 * sum;
    }
  }
  return out;
}

// The cache of one test: buffers, staging (KIVI) and the view over them.
struct TestCache {
  std::vector<uint8_t> kbuf, vbuf;
  std::vector<uint16_t> staged_k, staged_v;
  KvStaging staging;
  KvLayerView kv;

  TestCache(const AttnCase& c, int pool_blocks, int n_slots) {
    kv.k_type = c.k_type;
    kv.v_type = c.v_type;
    kv.n_blocks = pool_blocks;
    kv.block_size = c.block_size;
    kv.n_head_kv = c.n_head_kv;
    kv.head_dim = c.hd;
    kv.head_dim_v = c.hd_v;
    kv.v_in_k = c.v_in_k;
    kv.rotate_k = c.rotate;
    kbuf.assign(size_t(pool_blocks) * c.n_head_kv * kv.k_layout().bytes, 0xFF);  // NaN-ish garbage
    if (!c.v_in_k) vbuf.assign(size_t(pool_blocks) * c.n_head_kv * kv.v_layout().bytes, 0xFF);
    kv.k = kbuf.data();
    kv.v = c.v_in_k ? nullptr : vbuf.data();
    const bool stage_k = kv_type_is_kivi(c.k_type), stage_v = !c.v_in_k && kv_type_is_kivi(c.v_type);
    if (stage_k || stage_v) {
      staging.n_slots = n_slots;
      staging.slot_of_block.assign(pool_blocks, -1);
      staging.block_of_slot.assign(n_slots, -1);
      staging.n_written.assign(n_slots, 0);
      staging.last_write.assign(n_slots, 0);
      const size_t per_slot = size_t(c.n_head_kv) * c.block_size;
      if (stage_k) staged_k.assign(n_slots * per_slot * c.hd, 0xFFFF), staging.k = staged_k.data();
      if (stage_v) staged_v.assign(n_slots * per_slot * c.hd_v, 0xFFFF), staging.v = staged_v.data();
      kv.staging = &staging;
    }
  }
};

// One case's inputs, the sequence's block table and batches, and the checks against the cache.
struct Scenario {
  const AttnCase c;
  const int bs, n_blocks, pool_blocks;
  std::vector<int32_t> table, pos, seq;
  std::vector<int64_t> slot;
  std::vector<float> k, v, q, sinks;
  std::vector<double> rot;  // [hd][hd] when the keys are rotated
  AttentionParams ap;

  explicit Scenario(const AttnCase& cs)
      : c(cs), bs(c.block_size), n_blocks((c.n_ctx + bs - 1) / bs), pool_blocks(n_blocks + 3) {
    // Shuffled block table into a larger pool: the kernels must follow it, not assume contiguity.
    table.resize(n_blocks);
    for (int i = 0; i < n_blocks; ++i) table[i] = (i * 5 + 2) % pool_blocks;
    if (std::gcd(5, pool_blocks) != 1) std::iota(table.rbegin(), table.rend(), 1);
    k = random_vec(size_t(c.n_ctx) * c.n_head_kv * c.hd, 11);
    v = random_vec(size_t(c.n_ctx) * c.n_head_kv * c.hd_v, 12);
    q = random_vec(size_t(c.n_q) * c.n_head * c.hd, 13);
    sinks = random_vec(size_t(c.n_head), 14, 2.0f);
    if (c.rotate) rot = kvtest::rotation_matrix(c.hd);
    seq.assign(c.n_ctx, 0);
    for (int p = 0; p < c.n_ctx; ++p) pos.push_back(p), slot.push_back(int64_t(table[p / bs]) * bs + p % bs);
    ap.n_head = c.n_head;
    ap.n_head_kv = c.n_head_kv;
    ap.head_dim = c.hd;
    ap.head_dim_v = c.hd_v;
    ap.scale = 1.0f / std::sqrt(float(c.hd));
    ap.sliding_window = c.window;
    ap.softcap = c.softcap;
    ap.sinks = c.sinks ? sinks.data() : nullptr;
  }

  AttentionBatch batch(int first, int n) const {
    AttentionBatch b;
    b.n_tokens = n;
    b.pos = pos.data() + first;
    b.seq = seq.data() + first;
    b.slot = slot.data() + first;
    b.block_tables = {table.data()};
    b.n_blocks = {n_blocks};
    return b;
  }
  double k_orig(int p, int g, int e) const { return k[(size_t(p) * c.n_head_kv + g) * c.hd + e]; }
  double v_orig(int p, int g, int e) const {
    return c.v_in_k ? k_orig(p, g, e) : double(v[(size_t(p) * c.n_head_kv + g) * c.hd_v + e]);
  }
  // The (rotated) key row store_kv quantizes, padded with zeros to a multiple of 32.
  std::vector<double> k_stored(int p, int g) const {
    std::vector<double> row((c.hd + 31) / 32 * 32, 0.0);
    for (int e = 0; e < c.hd; ++e) {
      double s = rot.empty() ? k_orig(p, g, e) : 0.0;
      for (int j = 0; !rot.empty() && j < c.hd; ++j) s += rot[size_t(e) * c.hd + j] * k_orig(p, g, j);
      row[e] = s;
    }
    return row;
  }
  double k_dec(const KvLayerView& kv, int p, int g, int e) const {
    return kvtest::cache_element(kv, true, table[p / bs], g, p % bs, e);
  }
  double v_dec(const KvLayerView& kv, int p, int g, int e) const {
    return c.v_in_k ? k_dec(kv, p, g, e) : kvtest::cache_element(kv, false, table[p / bs], g, p % bs, e);
  }

  // Most tokens in one batch (prefill), the last few one at a time (decode).
  void store(Backend& backend, const KvLayerView& kv) const {
    const int n_first = std::max(1, c.n_ctx - 5);
    backend.store_kv(kv, k.data(), c.v_in_k ? nullptr : v.data(), batch(0, n_first));
    for (int p = n_first; p < c.n_ctx; ++p)
      backend.store_kv(kv, k.data() + size_t(p) * c.n_head_kv * c.hd,
                       c.v_in_k ? nullptr : v.data() + size_t(p) * c.n_head_kv * c.hd_v, batch(p, 1));
  }

  // Check 1: each element of K within its format's bound of the (rotated) key given.
  void check_keys(const KvLayerView& kv, int p, int g) const {
    const bool staged = kv.staging && kv.staging->k && kv.staging->slot_of_block[table[p / bs]] >= 0;
    const std::vector<double> kr = k_stored(p, g);
    for (int e = 0; e < c.hd; ++e) {
      double bound;
      if (staged || kv_type_is_float(c.k_type)) {
        bound = kvtest::group_bound(staged ? KvType::F16 : c.k_type, &kr[e], 1);
      } else if (kv_type_is_kivi(c.k_type)) {  // the channel across the block's tokens
        std::vector<double> ch;
        for (int t = 0; t < bs; ++t) ch.push_back(k_stored(p / bs * bs + t, g)[e]);
        bound = kvtest::group_bound(c.k_type, ch.data(), bs, true);
      } else {
        bound = kvtest::group_bound(c.k_type, &kr[e / 32 * 32], 32);
      }
      ASSERT_LE(std::fabs(k_dec(kv, p, g, e) - kr[e]), bound)
          << c.name << " K at " << p << "," << g << "," << e;
    }
  }

  // Check 1 for V; returns the largest V error (of the K prefix, for MLA).
  double check_values(const KvLayerView& kv, int p, int g) const {
    double eps = 0;
    if (c.v_in_k) {
      for (int e = 0; e < c.hd_v; ++e) eps = std::max(eps, std::fabs(v_dec(kv, p, g, e) - v_orig(p, g, e)));
      return eps;
    }
    const bool staged = kv.staging && kv.staging->v && kv.staging->slot_of_block[table[p / bs]] >= 0;
    const KvType vt = staged ? KvType::F16 : c.v_type;
    std::vector<double> vr((c.hd_v + 31) / 32 * 32, 0.0);
    for (int e = 0; e < c.hd_v; ++e) vr[e] = v_orig(p, g, e);
    for (int e = 0; e < c.hd_v; ++e) {
      const double bound = kv_type_is_float(vt) ? kvtest::group_bound(vt, &vr[e], 1)
                                                : kvtest::group_bound(vt, &vr[e / 32 * 32], 32);
      const double err = std::fabs(v_dec(kv, p, g, e) - vr[e]);
      EXPECT_LE(err, bound) << c.name << " V at " << p << "," << g << "," << e;
      eps = std::max(eps, err);
    }
    return eps;
  }
};

class AttentionVariants : public ::testing::TestWithParam<AttnCase> {};

TEST_P(AttentionVariants, MatchesFloat64References) {
  const Scenario sc(GetParam());
  const AttnCase& c = sc.c;
  // The unquantized reference (an F32 cache).
  std::vector<std::vector<double>> q_plain, q_eff;
  for (int r = 0; r < c.n_q * c.n_head; ++r) {
    q_plain.push_back(effective_query(sc.q.data() + size_t(r) * c.hd, c.hd, {}, false));
    q_eff.push_back(effective_query(sc.q.data() + size_t(r) * c.hd, c.hd, sc.rot, int_keys(c.k_type),
                                    min_error_query(c.k_type)));
  }
  std::vector<double> logits_f32;
  const auto want_f32 = attention_ref(
      c, q_plain, [&](int p, int g, int e) { return sc.k_orig(p, g, e); },
      [&](int p, int g, int e) { return sc.v_orig(p, g, e); }, sc.sinks, sc.ap.scale, &logits_f32);
  double vmax = 0;
  for (float x : c.v_in_k ? sc.k : sc.v) vmax = std::max(vmax, std::fabs(double(x)));

  const IsaLevel saved = isa_level();
  auto backend = make_cpu_backend(2);
  for (IsaLevel isa : levels()) {
    set_isa_level(isa);
    TestCache cache(c, sc.pool_blocks, 4);
    const KvLayerView& kv = cache.kv;
    sc.store(*backend, kv);
    // 1. What the cache holds, against what it was given.
    double eps_v = 0;
    for (int p = 0; p < c.n_ctx; ++p)
      for (int g = 0; g < c.n_head_kv; ++g) {
        ASSERT_NO_FATAL_FAILURE(sc.check_keys(kv, p, g));
        eps_v = std::max(eps_v, sc.check_values(kv, p, g));
      }
    // 2. The kernel against float64 attention over the decoded cache.
    std::vector<double> logits_dec;
    const auto want = attention_ref(
        c, q_eff, [&](int p, int g, int e) { return sc.k_dec(kv, p, g, e); },
        [&](int p, int g, int e) { return sc.v_dec(kv, p, g, e); }, sc.sinks, sc.ap.scale, &logits_dec);
    std::vector<float> out(want.size(), -99.0f);
    backend->attention(sc.q.data(), kv, sc.batch(c.n_ctx - c.n_q, c.n_q), sc.ap, out.data());
    const double tol = int_keys(c.k_type) ? 5e-3 : c.softcap > 0 ? 1e-4 : 3e-5;
    const auto wr = weight_rounding_bounds(c, logits_dec, sc.sinks, vmax, isa);
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_NEAR(out[i], want[i], tol * (1 + std::fabs(want[i])) + wr[i / c.hd_v])
          << c.name << " " << isa_name(isa) << " at " << i << " (token " << i / (size_t(c.n_head) * c.hd_v)
          << ", head " << i / c.hd_v % c.n_head << ")";
    // 3. Against the unquantized attention, within the bound quantization allows.
    double delta = 0;
    for (size_t i = 0; i < logits_f32.size(); ++i)
      delta = std::max(delta, std::fabs(logits_dec[i] - logits_f32[i]));
    const double bound = eps_v + vmax * (std::exp(2 * delta) - 1) + 1e-4;
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_NEAR(out[i], want_f32[i], bound + wr[i / c.hd_v])
          << c.name << " " << isa_name(isa) << " vs F32 at " << i;
  }
  set_isa_level(saved);
}

AttnCase typed(const char* name, KvType k, KvType v, bool rotate, int hd = 64, int bs = 16, int n_ctx = 45,
               int n_q = 3) {
  return AttnCase{name, hd, hd, 8, 2, bs, n_ctx, n_q, 0, 0, false, false, k, v, rotate};
}

// hd, hd_v, n_head, n_head_kv, block, n_ctx, n_q, window, softcap, sinks, v_in_k
INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionVariants,
    ::testing::Values(
        AttnCase{"first_token", 64, 64, 8, 4, 16, 1, 1, 0, 0, false, false},
        AttnCase{"decode_partial", 64, 64, 8, 4, 16, 37, 1, 0, 0, false, false},
        AttnCase{"chunk5", 64, 64, 8, 4, 16, 37, 5, 0, 0, false, false},
        AttnCase{"mqa_f32", 32, 32, 4, 1, 16, 70, 8, 0, 0, false, false, KvType::F32, KvType::F32},
        AttnCase{"gqa8", 128, 128, 32, 4, 16, 100, 2, 0, 0, false, false},
        AttnCase{"mha_block32", 80, 80, 6, 6, 32, 65, 3, 0, 0, false, false},
        AttnCase{"window", 64, 64, 4, 2, 16, 90, 4, 20, 0, false, false},
        AttnCase{"hd256_block8", 256, 256, 2, 2, 8, 19, 3, 0, 0, false, false, KvType::F32, KvType::F32},
        AttnCase{"odd_dims", 33, 31, 3, 1, 16, 41, 3, 0, 0, false, false},
        AttnCase{"odd_block", 48, 48, 4, 2, 7, 30, 4, 9, 0, false, false},
        // gemma2: soft-capping at 50 with a sliding window, head size 256
        AttnCase{"softcap", 256, 256, 8, 4, 16, 70, 3, 32, 50.0f, false, false},
        AttnCase{"softcap_small", 64, 64, 4, 4, 16, 33, 2, 0, 0.5f, false, false, KvType::F32, KvType::F32},
        // gpt-oss: sinks, GQA 8, alternating window
        AttnCase{"sinks", 64, 64, 16, 2, 16, 50, 4, 0, 0, true, false},
        AttnCase{"sinks_window", 64, 64, 16, 2, 16, 50, 2, 8, 0, true, false},
        // DeepSeek without absorption: q/k 192, v 128
        AttnCase{"hd_v_smaller", 192, 128, 8, 8, 16, 45, 2, 0, 0, false, false},
        AttnCase{"hd_v_larger", 64, 96, 4, 2, 16, 20, 1, 0, 0, false, false, KvType::F32, KvType::F32},
        // DeepSeek V2/V3 absorbed MLA: one latent head of 512 + 64 rope, 128 heads
        AttnCase{"mla_decode", 576, 512, 128, 1, 16, 40, 1, 0, 0, false, true},
        AttnCase{"mla_chunk", 576, 512, 128, 1, 16, 23, 3, 0, 0, false, true},
        AttnCase{"mla_small", 96, 64, 16, 1, 16, 35, 5, 0, 0, false, true, KvType::F32, KvType::F32},
        AttnCase{"everything", 576, 512, 128, 1, 32, 50, 2, 40, 30.0f, true, true, KvType::F32, KvType::F32},
        AttnCase{"group128_block7", 64, 48, 128, 1, 7, 19, 2, 0, 0, true, false},
        // KV element types, K and V chosen separately
        typed("bf16", KvType::BF16, KvType::BF16, false), typed("q8_0", KvType::Q8_0, KvType::Q8_0, false),
        typed("q8_0_rotated", KvType::Q8_0, KvType::Q8_0, true),
        typed("q4_0_f16", KvType::Q4_0, KvType::F16, false),
        typed("q4_0_rotated_q8_0", KvType::Q4_0, KvType::Q8_0, true),
        typed("q4_1_q4_1", KvType::Q4_1, KvType::Q4_1, true),
        typed("q5_0_q5_1", KvType::Q5_0, KvType::Q5_1, true),
        typed("q5_1_q5_0", KvType::Q5_1, KvType::Q5_0, false),
        typed("iq4_nl", KvType::IQ4_NL, KvType::IQ4_NL, true),
        typed("iq4_nl_plain", KvType::IQ4_NL, KvType::F32, false),
        typed("f16_q4_0", KvType::F16, KvType::Q4_0, false),
        typed("q8_0_hd80", KvType::Q8_0, KvType::Q8_0, true, 80, 16, 40, 2),      // padded heads
        typed("q8_0_hd8", KvType::Q8_0, KvType::Q8_0, true, 8, 16, 40, 2),        // searched scales
        typed("q4_0_hd16", KvType::Q4_0, KvType::Q8_0, true, 16, 16, 40, 2),      // searched queries
        typed("q4_1_hd33_b7", KvType::Q4_1, KvType::IQ4_NL, true, 33, 7, 30, 4),  // odd block
        typed("q8_0_hd576_b32", KvType::Q8_0, KvType::BF16, true, 576, 32, 70, 1),
        typed("kivi4", KvType::KIVI4, KvType::KIVI4, false),
        typed("kivi2", KvType::KIVI2, KvType::KIVI2, false),
        typed("kivi4_rotated_q8_0", KvType::KIVI4, KvType::Q8_0, true),
        typed("q8_0_kivi2", KvType::Q8_0, KvType::KIVI2, true),
        typed("kivi2_b32_full", KvType::KIVI2, KvType::KIVI4, false, 64, 32, 64, 2),
        typed("kivi4_b8", KvType::KIVI4, KvType::KIVI2, false, 96, 8, 29, 3),
        AttnCase{"mla_q8_0", 576, 512, 128, 1, 16, 40, 2, 0, 0, false, true, KvType::Q8_0, KvType::F16},
        AttnCase{"mla_kivi4", 96, 64, 16, 1, 16, 35, 2, 0, 0, false, true, KvType::KIVI4, KvType::F16},
        AttnCase{"q4_0_sinks_softcap", 64, 64, 16, 2, 16, 50, 2, 8, 20.0f, true, false, KvType::Q4_0,
                 KvType::Q8_0, true}),
    [](const ::testing::TestParamInfo<AttnCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace strata
