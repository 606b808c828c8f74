#include "backend/cpu/rope_table.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace strata::cpu {
namespace {

bool same_params(const RopeParams& a, const std::vector<float>& a_factors, const RopeParams& b) {
  if (a.n_rot != b.n_rot || (a.freq_factors != nullptr) != (b.freq_factors != nullptr)) return false;
  if (b.freq_factors && !std::equal(a_factors.begin(), a_factors.end(), b.freq_factors)) return false;
  return a.style == b.style && a.n_rot == b.n_rot && a.freq_base == b.freq_base && a.scaling == b.scaling &&
         a.factor == b.factor && a.llama3_low_freq_factor == b.llama3_low_freq_factor &&
         a.llama3_high_freq_factor == b.llama3_high_freq_factor &&
         a.llama3_original_ctx == b.llama3_original_ctx && a.yarn_original_ctx == b.yarn_original_ctx &&
         a.yarn_beta_fast == b.yarn_beta_fast && a.yarn_beta_slow == b.yarn_beta_slow &&
         a.yarn_ext_factor == b.yarn_ext_factor && a.attn_factor == b.attn_factor;
}

// YaRN (Peng et al. 2023, "YaRN: Efficient Context Window Extension"): the dimension pair whose
// wavelength turns `rotations` times over the original context, as a fractional pair index.
double yarn_pair_for_rotations(double rotations, const RopeParams& p) {
  return p.n_rot * std::log(p.yarn_original_ctx / (rotations * 2.0 * M_PI)) / (2.0 * std::log(p.freq_base));
}

}  // namespace

RopeFrequencies rope_frequencies(const RopeParams& p) {
  const int half = p.n_rot / 2;
  RopeFrequencies f;
  f.freq.resize(static_cast<size_t>(half));
  f.scaled.resize(static_cast<size_t>(half));
  f.mix.assign(static_cast<size_t>(half), 0.0);
  // Pairs below `low` (fast rotations) keep their original angle, pairs above `high` are
  // interpolated, with a linear ramp between.
  double low = 0.0, high = 0.0;
  if (p.scaling == RopeParams::Scaling::Yarn) {
    low = std::max(0.0, std::floor(yarn_pair_for_rotations(p.yarn_beta_fast, p)));
    high = std::min(p.n_rot - 1.0, std::ceil(yarn_pair_for_rotations(p.yarn_beta_slow, p)));
  }
  for (int i = 0; i < half; ++i) {
    double base = std::pow(static_cast<double>(p.freq_base), -2.0 * i / p.n_rot);
    if (p.freq_factors) base /= p.freq_factors[i];
    double scaled = base;
    double mix = 0.0;
    switch (p.scaling) {
      case RopeParams::Scaling::None:
        break;
      case RopeParams::Scaling::Linear:
        scaled = base / p.factor;
        break;
      case RopeParams::Scaling::Llama3: {
        const double low_wavelen = p.llama3_original_ctx / p.llama3_low_freq_factor;
        const double high_wavelen = p.llama3_original_ctx / p.llama3_high_freq_factor;
        const double wavelen = 2.0 * M_PI / base;
        if (wavelen > low_wavelen) {
          scaled = base / p.factor;
        } else if (wavelen >= high_wavelen) {
          const double smooth = (p.llama3_original_ctx / wavelen - p.llama3_low_freq_factor) /
                                (p.llama3_high_freq_factor - p.llama3_low_freq_factor);
          scaled = (1.0 - smooth) * base / p.factor + smooth * base;
        }
        break;
      }
      case RopeParams::Scaling::Yarn: {
        const double y = (i - low) / std::max(0.001, high - low);
        mix = (1.0 - std::min(1.0, std::max(0.0, y))) * p.yarn_ext_factor;
        scaled = base / p.factor;
        break;
      }
    }
    f.freq[static_cast<size_t>(i)] = base;
    f.scaled[static_cast<size_t>(i)] = scaled;
    f.mix[static_cast<size_t>(i)] = mix;
  }
  return f;
}

const float* RopeTables::get(const RopeParams& p, int32_t max_pos) {
  STRATA_CHECK(max_pos >= 0, "negative position");
  ++clock_;
  Entry* e = nullptr;
  for (Entry& c : entries_)
    if (same_params(c.params, c.freq_factors, p)) e = &c;
  if (e && max_pos < e->n_positions) {
    e->last_use = clock_;
    return e->table.data();
  }
  if (!e) {
    if (entries_.size() < kMaxEntries) {
      entries_.emplace_back();
      e = &entries_.back();
    } else {
      e = &*std::min_element(entries_.begin(), entries_.end(),
                             [](const Entry& a, const Entry& b) { return a.last_use < b.last_use; });
      e->n_positions = 0;
    }
  }
  const int64_t n_pos = std::max<int64_t>(max_pos + 1, e->n_positions > 0 ? e->n_positions * 2 : 256);
  const RopeFrequencies f = rope_frequencies(p);
  const int half = p.n_rot / 2;
  e->table.resize(static_cast<size_t>(n_pos) * p.n_rot);
  for (int64_t q = 0; q < n_pos; ++q)
    for (int i = 0; i < half; ++i) {
      const size_t k = static_cast<size_t>(i);
      const double theta = static_cast<double>(q) * (f.scaled[k] * (1.0 - f.mix[k]) + f.freq[k] * f.mix[k]);
      e->table[static_cast<size_t>(q * p.n_rot + 2 * i)] =
          static_cast<float>(std::cos(theta) * p.attn_factor);
      e->table[static_cast<size_t>(q * p.n_rot + 2 * i + 1)] =
          static_cast<float>(std::sin(theta) * p.attn_factor);
    }
  e->params = p;
  e->freq_factors.assign(p.freq_factors ? p.freq_factors : nullptr,
                         p.freq_factors ? p.freq_factors + half : nullptr);
  e->n_positions = n_pos;
  e->last_use = clock_;
  return e->table.data();
}

}  // namespace strata::cpu
