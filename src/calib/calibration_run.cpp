#include "calib/calibration_run.h"

#include "core/check.h"
#include "core/log.h"
#include "engine/offline.h"
#include "eval/perplexity.h"

namespace strata::calib {

int64_t CalibrationText::n_tokens() const {
  int64_t n = 0;
  for (const auto& c : chunks) n += static_cast<int64_t>(c.size());
  return n;
}

CalibrationText make_calibration_text(const Tokenizer& tok, const std::string& text, int64_t n_ctx,
                                      int64_t max_chunks) {
  if (n_ctx < 2) STRATA_THROW("calibration context ", n_ctx, " is too small (at least 2 tokens)");
  if (max_chunks < 0) STRATA_THROW("chunk count must not be negative");
  const std::vector<int32_t> tokens = eval::tokenize_eval_text(tok, text);
  if (tokens.size() < 2) STRATA_THROW("the calibration text has no tokens");
  const int32_t bos = eval::window_bos(tok);
  CalibrationText out;
  out.n_ctx = n_ctx;
  const auto n = static_cast<int64_t>(tokens.size());
  if (n < n_ctx) {
    log_warn("the calibration text has ", n, " tokens, fewer than one chunk of ", n_ctx, ": using it whole");
    out.chunks.push_back(tokens);
    out.n_ctx = n;
  } else {
    for (int64_t start = 0; start + n_ctx <= n; start += n_ctx) {
      if (max_chunks > 0 && static_cast<int64_t>(out.chunks.size()) >= max_chunks) break;
      out.chunks.emplace_back(tokens.begin() + start, tokens.begin() + start + n_ctx);
    }
  }
  if (bos >= 0)
    for (auto& c : out.chunks) c[0] = bos;
  return out;
}

void run_calibration(Model& model, const CalibrationText& text,
                     const std::function<void(int64_t, int64_t)>& progress) {
  Engine engine(model, offline::single_stream_config(text.n_ctx));
  const auto total = static_cast<int64_t>(text.chunks.size());
  for (int64_t i = 0; i < total; ++i) {
    offline::score(engine, text.chunks[static_cast<size_t>(i)], 0, [](int64_t, int64_t, const float*) {});
    if (progress) progress(i + 1, total);
  }
}

}  // namespace strata::calib
