#include "engine/spec/verifier.h"

#include <algorithm>

#include "core/check.h"

namespace strata {

Verdict verify_draft(const TokenDistribution& p, int32_t draft, const TokenDistribution* q, double u_draw,
                     double u_accept, std::vector<float>& scratch) {
  STRATA_CHECK(!p.tokens.empty());
  if (p.tokens.size() == 1) return {p.tokens[0], p.tokens[0] == draft};
  if (!q) {
    const int32_t t = p.draw(u_draw);
    return {t, t == draft};
  }
  const float qd = q->prob_of(draft);
  STRATA_CHECK(qd > 0.0f, "a sampled draft token has zero probability under its own distribution");
  const double ratio = static_cast<double>(p.prob_of(draft)) / qd;
  if (u_accept < ratio) return {draft, true};
  // Residual max(0, p - q) over p's candidates (outside them p is 0, so the residual is too).
  for (size_t i = 0; i < q->tokens.size(); ++i) {
    const auto t = static_cast<size_t>(q->tokens[i]);
    if (t >= scratch.size()) scratch.resize(t + 1, 0.0f);
    scratch[t] = q->probs[i];
  }
  TokenDistribution residual;
  double mass = 0.0;
  for (size_t i = 0; i < p.tokens.size(); ++i) {
    const auto t = static_cast<size_t>(p.tokens[i]);
    const double r = static_cast<double>(p.probs[i]) - (t < scratch.size() ? scratch[t] : 0.0f);
    if (r <= 0.0) continue;
    residual.tokens.push_back(p.tokens[i]);
    residual.probs.push_back(static_cast<float>(r));
    mass += r;
  }
  for (int32_t t : q->tokens) scratch[static_cast<size_t>(t)] = 0.0f;
  if (residual.tokens.empty()) {  // p == q up to rounding
    const int32_t t = p.draw(u_draw);
    return {t, t == draft};
  }
  for (float& r : residual.probs) r = static_cast<float>(r / mass);
  const int32_t t = residual.draw(u_draw);
  return {t, false};
}

}  // namespace strata
