#include "calib/layer_folds.h"

#include <cstdio>

#include "core/check.h"

namespace strata::calib {
namespace {

void multiply_columns(MatrixJob& j, const std::vector<float>& s) {
  WeightMatrix& m = j.m;
  STRATA_CHECK(static_cast<int64_t>(s.size()) == m.n_in);
  for (int64_t r = 0; r < m.n_out; ++r) {
    float* w = m.row(r);
    for (int64_t i = 0; i < m.n_in; ++i) w[i] *= s[static_cast<size_t>(i)];
  }
  if (j.col_scale.empty()) j.col_scale.assign(static_cast<size_t>(m.n_in), 1.0f);
  for (int64_t i = 0; i < m.n_in; ++i) j.col_scale[static_cast<size_t>(i)] *= s[static_cast<size_t>(i)];
  if (j.in) j.in->divide_channels(s);
}

void divide_rows(MatrixJob& j, std::vector<float>* bias, const std::vector<float>& s) {
  WeightMatrix& m = j.m;
  STRATA_CHECK(static_cast<int64_t>(s.size()) == m.n_out);
  for (int64_t r = 0; r < m.n_out; ++r) {
    float* w = m.row(r);
    const float inv = 1.0f / s[static_cast<size_t>(r)];
    for (int64_t i = 0; i < m.n_in; ++i) w[i] *= inv;
    if (bias) (*bias)[static_cast<size_t>(r)] *= inv;
  }
  if (j.row_div.empty()) j.row_div.assign(static_cast<size_t>(m.n_out), 1.0f);
  for (int64_t r = 0; r < m.n_out; ++r) j.row_div[static_cast<size_t>(r)] *= s[static_cast<size_t>(r)];
}

void divide_vector(std::vector<float>& v, const std::vector<float>& s) {
  STRATA_CHECK(v.size() == s.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] /= s[i];
}

// One fold: the scale search for the consumers, then the fold.
struct Fold {
  const char* label;
  const char* norm;                    // vector divided by s (or null)
  const char* producer;                // matrix whose rows are divided by s (or null)
  const char* producer_bias;           // its bias (or null)
  std::vector<const char*> consumers;  // matrices whose columns are multiplied by s
  bool gqa;                            // s per v channel, broadcast to o's heads
};

const std::vector<Fold>& folds() {
  static const std::vector<Fold> f = {
      {"attn_norm -> q,k,v",
       "attn_norm.weight",
       nullptr,
       nullptr,
       {"attn_q.weight", "attn_k.weight", "attn_v.weight"},
       false},
      {"v -> o", nullptr, "attn_v.weight", "attn_v.bias", {"attn_output.weight"}, true},
      {"ffn_norm -> gate,up",
       "ffn_norm.weight",
       nullptr,
       nullptr,
       {"ffn_gate.weight", "ffn_up.weight"},
       false},
      {"up -> down", nullptr, "ffn_up.weight", nullptr, {"ffn_down.weight"}, false},
  };
  return f;
}

template <typename ScaleFn>
FoldLog run_folds(LayerWork& L, const FoldShape& shape, const ScaleFn& scales_for) {
  FoldLog log;
  for (const Fold& f : folds()) {
    std::vector<MatrixJob*> consumers;
    bool ok = true;
    for (const char* c : f.consumers) {
      auto it = L.mats.find(c);
      ok = ok && it != L.mats.end() && it->second.in;
      if (ok) consumers.push_back(&it->second);
    }
    if (f.norm) ok = ok && L.vecs.count(f.norm);
    MatrixJob* producer = nullptr;
    if (f.producer) {
      auto it = L.mats.find(f.producer);
      ok = ok && it != L.mats.end();
      if (ok) producer = &it->second;
    }
    if (!ok) continue;
    const int64_t n = consumers[0]->m.n_in;
    std::vector<int32_t> group;
    int64_t n_groups = n;
    if (f.gqa) {
      if (shape.n_head <= 0 || shape.n_head_kv <= 0 || shape.head_dim <= 0 ||
          n != shape.n_head * shape.head_dim || producer->m.n_out != shape.n_head_kv * shape.head_dim)
        continue;
      group = gqa_channel_map(shape);
      n_groups = producer->m.n_out;
    } else if (producer && producer->m.n_out != n) {
      continue;
    }
    std::vector<const WeightMatrix*> mats;
    for (MatrixJob* c : consumers) mats.push_back(&c->m);
    std::string note;
    const std::vector<float> s = scales_for(mats, *consumers[0]->in, group, n_groups, &note);
    const std::vector<float> s_cols = expand_scales(s, group, n);
    for (MatrixJob* c : consumers) multiply_columns(*c, s_cols);
    if (f.norm) divide_vector(L.vecs[f.norm], s_cols);
    if (producer) {
      std::vector<float>* bias = nullptr;
      if (f.producer_bias && L.vecs.count(f.producer_bias)) bias = &L.vecs[f.producer_bias];
      divide_rows(*producer, bias, s);
    }
    log.lines.push_back(std::string(f.label) + ": " + note);
  }
  return log;
}

}  // namespace

std::vector<int32_t> gqa_channel_map(const FoldShape& sh) {
  const int64_t group = sh.n_head / sh.n_head_kv;
  std::vector<int32_t> map(static_cast<size_t>(sh.n_head * sh.head_dim));
  for (int64_t h = 0; h < sh.n_head; ++h)
    for (int64_t d = 0; d < sh.head_dim; ++d)
      map[static_cast<size_t>(h * sh.head_dim + d)] = static_cast<int32_t>((h / group) * sh.head_dim + d);
  return map;
}

FoldLog apply_awq(LayerWork& L, const FoldShape& shape, const AwqOptions& o, ThreadPool* pool) {
  return run_folds(L, shape,
                   [&](const std::vector<const WeightMatrix*>& mats, const InputStats& in,
                       const std::vector<int32_t>& group, int64_t n_groups, std::string* note) {
                     const AwqScales r = awq_search_scales(mats, in, group, n_groups, o, pool);
                     char buf[96];
                     std::snprintf(buf, sizeof buf, "alpha %.2f, loss %.3gx of plain", r.alpha,
                                   r.loss_plain > 0 ? r.loss / r.loss_plain : 1.0);
                     *note = buf;
                     return r.s;
                   });
}

}  // namespace strata::calib
