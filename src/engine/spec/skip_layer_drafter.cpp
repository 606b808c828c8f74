#include "engine/spec/skip_layer_drafter.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "core/check.h"
#include "core/log.h"
#include "engine/spec/draft_rounds.h"

namespace strata {
namespace {

std::vector<uint8_t> parse_layers(const std::string& text, int64_t n_layer) {
  std::vector<uint8_t> skip(static_cast<size_t>(n_layer), 0);
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const long l = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || l < 0 || l >= n_layer)
      STRATA_THROW("skip: layer '", item, "' is not a layer number in [0, ", n_layer, ")");
    skip[static_cast<size_t>(l)] = 1;
  }
  if (std::count(skip.begin(), skip.end(), 1) == n_layer) STRATA_THROW("skip: cannot skip every layer");
  return skip;
}

// Argmax of every row of the calibration tokens with the given layers skipped.
std::vector<int32_t> argmax_rows(ModelExecutor& ex, const std::vector<int32_t>& tokens,
                                 const std::vector<uint8_t>* skip) {
  std::vector<BlockId> blocks(static_cast<size_t>(ex.kv().n_blocks()));
  std::iota(blocks.begin(), blocks.end(), 0);
  ForwardBatch b;
  b.block_tables.push_back(&blocks);
  b.skip_layers = skip;
  for (size_t i = 0; i < tokens.size(); ++i) b.add(tokens[i], static_cast<int32_t>(i), 0, true);
  const float* logits = ex.execute({}, b);
  const int64_t n_vocab = ex.config().n_vocab;
  std::vector<int32_t> out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const float* row = logits + static_cast<int64_t>(i) * n_vocab;
    out.push_back(static_cast<int32_t>(std::max_element(row, row + n_vocab) - row));
  }
  return out;
}

double agreement(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  return a.empty() ? 0.0 : static_cast<double>(same) / static_cast<double>(a.size());
}

}  // namespace

double expected_speedup(double alpha, double cost, int32_t k_max) {
  double best = 1.0;
  for (int32_t k = 1; k <= k_max; ++k) {
    const double tokens = alpha >= 1.0 ? k + 1.0 : (1.0 - std::pow(alpha, k + 1)) / (1.0 - alpha);
    best = std::max(best, tokens / (1.0 + k * cost));
  }
  return best;
}

SkipLayerDrafter::SkipLayerDrafter(const DraftMethodSpec& method, ModelExecutor& target,
                                   std::vector<int32_t> calibration, int32_t draft_max)
    : method_(method), target_(target), calibration_(std::move(calibration)), draft_max_(draft_max) {
  if (method.arg != "auto")
    skip_ = parse_layers(method.arg, target.config().n_layer);
  else if (!calibration_.empty())
    calibrate(calibration_);
}

double SkipLayerDrafter::relative_cost() const {
  const double n = static_cast<double>(target_.config().n_layer);
  const double skipped =
      skip_.empty() ? n / 2 : static_cast<double>(std::count(skip_.begin(), skip_.end(), 1));
  return (n - skipped) / n;
}

void SkipLayerDrafter::calibrate(const std::vector<int32_t>& tokens_in) {
  const int64_t n_layer = target_.config().n_layer;
  std::vector<int32_t> tokens(tokens_in.begin(), tokens_in.begin() + std::min<size_t>(tokens_in.size(), 64));
  skip_.assign(static_cast<size_t>(n_layer), 0);
  if (n_layer < 3 || tokens.size() < 4) return;  // nothing sensible to skip: drafts equal the target
  // A scratch cache for the calibration passes, outside the engine's pool.
  KvGeometry g = target_.kv().geometry();
  ModelExecutor scratch(target_.model(), g,
                        static_cast<int32_t>((tokens.size() + g.block_size - 1) / g.block_size));
  const std::vector<int32_t> full = argmax_rows(scratch, tokens, nullptr);
  // Each inner layer skipped alone; the first and the last layer are never skipped.
  std::vector<std::pair<double, int64_t>> alone;
  for (int64_t l = 1; l + 1 < n_layer; ++l) {
    std::vector<uint8_t> s(static_cast<size_t>(n_layer), 0);
    s[static_cast<size_t>(l)] = 1;
    alone.push_back({agreement(argmax_rows(scratch, tokens, &s), full), l});
  }
  std::sort(alone.begin(), alone.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  // Skip the m least important layers for a few m; keep the best expected speed-up.
  double best = 1.0;
  const int64_t inner = n_layer - 2;
  std::vector<int64_t> counts = {std::max<int64_t>(1, inner / 4), std::max<int64_t>(1, inner / 2),
                                 std::max<int64_t>(1, 3 * inner / 4)};
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  for (int64_t m : counts) {
    std::vector<uint8_t> s(static_cast<size_t>(n_layer), 0);
    for (int64_t i = 0; i < m; ++i) s[static_cast<size_t>(alone[static_cast<size_t>(i)].second)] = 1;
    const double a = agreement(argmax_rows(scratch, tokens, &s), full);
    const double speed =
        expected_speedup(a, static_cast<double>(n_layer - m) / static_cast<double>(n_layer), draft_max_);
    log_info("skip:auto: skipping ", m, " of ", n_layer, " layers agrees with the target on ", a * 100.0,
             "% of calibration tokens (expected speed-up ", speed, "x)");
    if (speed > best) best = speed, skip_ = s;
  }
  if (best <= 1.0)
    skip_[static_cast<size_t>(alone[0].second)] = 1;  // least harmful layer: cheap, still a draft
}

void SkipLayerDrafter::draft(std::span<DraftSlot* const> slots) {
  if (skip_.empty()) calibrate(*slots.front()->tokens);
  // The target's own K/V covers every accepted token but the last one.
  std::vector<int64_t> start;
  for (DraftSlot* s : slots) start.push_back(static_cast<int64_t>(s->tokens->size()) - 1);
  DraftRoundsInput in;
  in.executor = &target_;
  in.skip_layers = &skip_;
  in.n_vocab = static_cast<int32_t>(target_.config().n_vocab);
  in.timing = &timing_;
  run_draft_rounds(in, slots, start);
}

}  // namespace strata
