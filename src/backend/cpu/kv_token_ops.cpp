#include "backend/cpu/kv_token_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/attention.h"
#include "core/check.h"

namespace strata::cpu {
namespace {

uint8_t* tile(void* base, const KvTileLayout& l, const KvLayerView& kv, int64_t block, int32_t g) {
  return static_cast<uint8_t*>(base) + (static_cast<size_t>(block) * kv.n_head_kv + g) * l.bytes;
}

// One token's bytes of a tile: t -> u of the same order (tiles may be the same).
void move_in_tile(const KvTileLayout& l, const uint8_t* src, int32_t t, uint8_t* dst, int32_t u) {
  switch (l.order) {
    case KvTileOrder::Transposed:
      for (int32_t e = 0; e < l.dim; ++e)
        std::memmove(dst + (static_cast<size_t>(e) * l.block_size + u) * l.elem_bytes,
                     src + (static_cast<size_t>(e) * l.block_size + t) * l.elem_bytes, l.elem_bytes);
      return;
    case KvTileOrder::TokenRows:
      std::memmove(dst + static_cast<size_t>(u) * l.row_bytes, src + static_cast<size_t>(t) * l.row_bytes,
                   l.row_bytes);
      return;
    case KvTileOrder::Interleaved: {
      const bool q8 = l.type == KvType::Q8_0;
      const int32_t n_groups = l.padded_dim / 32, subgroups = q8 ? 8 : 4;
      for (int32_t g = 0; g < n_groups; ++g) {
        std::memmove(dst + kv_interleaved_scale(l.block_size, g, u),
                     src + kv_interleaved_scale(l.block_size, g, t), 2);
        for (int32_t c = 0; c < subgroups; ++c)
          std::memmove(dst + kv_interleaved_quants(n_groups, l.block_size, g, c, u, q8),
                       src + kv_interleaved_quants(n_groups, l.block_size, g, c, t, q8), 4);
      }
      return;
    }
    case KvTileOrder::ChannelRows:
      break;
  }
  STRATA_CHECK(false, "KIVI keys cannot be moved token by token");
}

}  // namespace

bool kv_tokens_addressable(const KvLayerView& kv) {
  return kv.staging == nullptr && !kv_type_is_kivi(kv.k_type) && (kv.v_in_k || !kv_type_is_kivi(kv.v_type));
}

void load_key(const KvLayerView& kv, const KvCodecKernels& codec, int64_t block, int32_t g, int32_t t,
              float* y) {
  const KvTileLayout l = kv.k_layout();
  const uint8_t* p = tile(kv.k, l, kv, block, g);
  switch (l.order) {
    case KvTileOrder::Transposed:
      for (int32_t e = 0; e < l.dim; ++e)
        codec.to_f32(l.type, p + (static_cast<size_t>(e) * l.block_size + t) * l.elem_bytes, y + e, 1);
      return;
    case KvTileOrder::TokenRows:
      codec.dequantize_row(l.type, p + static_cast<size_t>(t) * l.row_bytes, l.dim, y);
      return;
    case KvTileOrder::Interleaved:
      codec.load_interleaved(l.type, p, l.dim, l.block_size, t, y);
      return;
    case KvTileOrder::ChannelRows:
      break;
  }
  STRATA_CHECK(false, "KIVI keys cannot be read token by token");
}

void move_token(const KvLayerView& kv, int32_t g, int64_t src, int64_t dst) {
  if (src == dst) return;
  const int32_t bs = kv.block_size;
  const int64_t sb = src / bs, db = dst / bs;
  const auto st = static_cast<int32_t>(src % bs), dt = static_cast<int32_t>(dst % bs);
  const KvTileLayout kl = kv.k_layout();
  move_in_tile(kl, tile(kv.k, kl, kv, sb, g), st, tile(kv.k, kl, kv, db, g), dt);
  if (kv.v_in_k) return;
  const KvTileLayout vl = kv.v_layout();
  move_in_tile(vl, tile(kv.v, vl, kv, sb, g), st, tile(kv.v, vl, kv, db, g), dt);
}

void attention_scores_head(const ScoreJob& job, const KvLayerView& kv, const KvCodecKernels& codec) {
  const int32_t hd = kv.head_dim, bs = kv.block_size;
  const int32_t stride = kv.k_layout().padded_dim;
  int32_t max_pos = 0;
  for (int32_t i = 0; i < job.n_q; ++i) max_pos = std::max(max_pos, job.pos[i]);
  STRATA_CHECK(max_pos < job.n_keys, "an observation query beyond the scored keys");
  std::vector<float> keys(static_cast<size_t>(max_pos + 1) * stride);  // [max_pos + 1][padded_dim]
  for (int32_t j = 0; j <= max_pos; ++j)
    load_key(kv, codec, job.block_table[j / bs], job.kv_head, j % bs,
             keys.data() + static_cast<size_t>(j) * stride);
  std::vector<float> qh(static_cast<size_t>(hd)), logit(static_cast<size_t>(max_pos + 1));
  for (int32_t i = 0; i < job.n_q; ++i) {
    const int32_t n = job.pos[i] + 1;
    for (int32_t h = 0; h < job.group; ++h) {
      std::memcpy(qh.data(), job.q + i * job.q_stride + static_cast<int64_t>(h) * hd, sizeof(float) * hd);
      if (kv.rotate_k) codec.rotate(qh.data(), hd);
      float mx = job.sinks ? job.sinks[h] : -INFINITY;
      for (int32_t j = 0; j < n; ++j) {
        const float* k = keys.data() + static_cast<size_t>(j) * stride;
        float dot = 0.0f;
        for (int32_t e = 0; e < hd; ++e) dot += qh[e] * k[e];
        float s = dot * job.scale;
        if (job.softcap > 0.0f) s = job.softcap * std::tanh(s / job.softcap);
        logit[j] = s;
        mx = std::max(mx, s);
      }
      double sum = job.sinks ? std::exp(static_cast<double>(job.sinks[h] - mx)) : 0.0;
      for (int32_t j = 0; j < n; ++j) sum += std::exp(static_cast<double>(logit[j] - mx));
      const double inv = 1.0 / sum;
      for (int32_t j = 0; j < n; ++j)
        job.acc[j] += static_cast<float>(std::exp(static_cast<double>(logit[j] - mx)) * inv);
    }
  }
}

}  // namespace strata::cpu
