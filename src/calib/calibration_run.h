// Runs a model over calibration text through the engine (as llama-imatrix does): the text is cut
// into chunks of n_ctx tokens, each chunk's first token replaced by BOS when the vocabulary adds
// one, and every chunk evaluated as one prompt with the logits of all rows, so that the output
// matrix sees every position too. The model is loaded on a RecordingBackend, which collects the
// statistics.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/model.h"

namespace strata::calib {

struct CalibrationText {
  int64_t n_ctx = 0;
  std::vector<std::vector<int32_t>> chunks;  // each [n_ctx] (or the whole text when shorter)
  int64_t n_tokens() const;
};

// max_chunks 0: every whole chunk of the text. Throws strata::Error for an empty text.
CalibrationText make_calibration_text(const Tokenizer& tok, const std::string& text, int64_t n_ctx,
                                      int64_t max_chunks);

// progress(chunks done, n_chunks) after each chunk.
void run_calibration(Model& model, const CalibrationText& text,
                     const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace strata::calib
