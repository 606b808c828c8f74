#include "engine/embedding.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "formats/metadata.h"

namespace strata {

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::None:
      return "none";
    case Pooling::Mean:
      return "mean";
    case Pooling::Cls:
      return "cls";
    case Pooling::Last:
      return "last";
  }
  return "";
}

Pooling parse_pooling(std::string_view name) {
  if (name == "mean") return Pooling::Mean;
  if (name == "cls") return Pooling::Cls;
  if (name == "last") return Pooling::Last;
  STRATA_THROW("unknown pooling '", std::string(name), "' (expected mean, cls or last)");
}

std::optional<Pooling> model_pooling(const Metadata& metadata, const std::string& arch) {
  const std::optional<int64_t> type = metadata.get_int(arch + ".pooling_type");
  if (!type) return std::nullopt;
  switch (*type) {  // llama.cpp's enum llama_pooling_type
    case 1:
      return Pooling::Mean;
    case 2:
      return Pooling::Cls;
    case 3:
      return Pooling::Last;
    default:
      return std::nullopt;
  }
}

Pooling resolve_pooling(Pooling requested, const Metadata& metadata, const std::string& arch) {
  if (requested != Pooling::None) return requested;
  return model_pooling(metadata, arch).value_or(Pooling::Mean);
}

EmbeddingPool::EmbeddingPool(Pooling pooling, int64_t n_embd, int64_t n_prompt)
    : pooling_(pooling), n_prompt_(n_prompt), sum_(static_cast<size_t>(n_embd), 0.0) {
  STRATA_CHECK(pooling != Pooling::None && n_embd > 0 && n_prompt > 0);
}

bool EmbeddingPool::wants(int64_t pos) const {
  switch (pooling_) {
    case Pooling::Mean:
      return pos >= 0 && pos < n_prompt_;
    case Pooling::Cls:
      return pos == 0;
    case Pooling::Last:
      return pos == n_prompt_ - 1;
    case Pooling::None:
      break;
  }
  return false;
}

void EmbeddingPool::add(int64_t pos, const float* row) {
  STRATA_CHECK(wants(pos));
  if (pos < next_pos_) return;  // recomputed after a preemption: already counted
  next_pos_ = pos + 1;
  for (size_t i = 0; i < sum_.size(); ++i) sum_[i] += row[i];
  ++n_rows_;
}

std::vector<float> EmbeddingPool::result() const {
  const int64_t expected = pooling_ == Pooling::Mean ? n_prompt_ : 1;
  STRATA_CHECK(n_rows_ == expected, "pooled ", n_rows_, " rows of ", expected);
  std::vector<float> out(sum_.size());
  for (size_t i = 0; i < sum_.size(); ++i)
    out[i] = static_cast<float>(sum_[i] / static_cast<double>(n_rows_));
  return out;
}

void normalize_embedding(std::vector<float>& v, int32_t norm) {
  if (norm < -1) STRATA_THROW("embedding normalization must be -1, 0, 1, 2 or a larger p-norm, got ", norm);
  if (norm == -1) return;
  double scale = 0.0;  // what v is divided by
  if (norm == 0) {
    for (float x : v) scale = std::max(scale, static_cast<double>(std::fabs(x)));
    scale /= 32760.0;
  } else if (norm == 2) {
    for (float x : v) scale += static_cast<double>(x) * x;
    scale = std::sqrt(scale);
  } else {
    for (float x : v) scale += std::pow(std::fabs(static_cast<double>(x)), norm);
    scale = std::pow(scale, 1.0 / norm);
  }
  const double inv = scale > 0.0 ? 1.0 / scale : 0.0;
  for (float& x : v) x = static_cast<float>(x * inv);
}

}  // namespace strata
