// A Hessian for the rows of an untied token embedding, which GPTQ can then round (gptq.h) like
// any other matrix even though no calibration input reaches a lookup.
//
// An error d in token t's row enters the residual stream and is read by every matrix behind an
// RMSNorm: a reader W behind the norm weight g sees W diag(g) d / rms (to first order, leaving out
// the norm's projection off the row's own direction, one direction of n_embd). The output error
// of a group of readers is therefore d^T H_g d with H_g = sum_W diag(g) W^T W diag(g): a quadratic
// form the same for every token, so one H rounds every row.
//
// Which readers count, and how much, is the caller's (quantize_job.h, --embd-readers). Measured on
// synth-tiny (BENCHMARKS.md): the first layer's gate/up and the output matrix gain; the attention
// readers cost (a token's own value row is averaged with the other positions' by the attention,
// and q/k reach the output only through the softmax), and GPTQ under them moves the error into
// the directions the per-token readers weigh. Each group is scaled to a mean diagonal of 1 before
// its weight applies, and `identity` adds that much of I (the plain squared error), which keeps
// directions no reader weighs from taking all the error.
#pragma once

#include <cstdint>
#include <vector>

namespace strata {
class ThreadPool;
}

namespace strata::calib {

struct EmbeddingReaderGroup {
  double weight = 1;
  std::vector<float> gamma;        // [n_embd] the RMSNorm weight in front of the readers (empty: 1)
  std::vector<const float*> mats;  // each [rows[i], n_embd] row-major f32
  std::vector<int64_t> rows;
};

// Returns H: [n_embd, n_embd] f32, symmetric, = identity * I + sum_g weight_g * H_g / mean(diag H_g).
std::vector<float> embedding_hessian(int64_t n_embd, const std::vector<EmbeddingReaderGroup>& groups,
                                     double identity, ThreadPool* pool);

}  // namespace strata::calib
