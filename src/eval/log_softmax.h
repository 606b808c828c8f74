// Log-softmax of one row of logits, in double precision (quality metrics compare small
// differences of log-probabilities, which float would blur).
#pragma once

#include <cstdint>
#include <vector>

namespace strata::eval {

// out[i] = logits[i] - log(sum_j exp(logits[j])), computed in double with the maximum
// subtracted first. logits: [n_vocab]; out is resized to n_vocab. Throws strata::Error when
// the row holds NaN or no finite value (a broken model).
void log_softmax(const float* logits, int64_t n_vocab, std::vector<double>& out);

// The same for a row that is already in double (re-normalising decoded log-probabilities).
void log_softmax(const double* values, int64_t n_vocab, std::vector<double>& out);

// Index of the largest value; the lowest index wins a tie. n_vocab > 0.
int32_t argmax(const float* values, int64_t n_vocab);
int32_t argmax(const double* values, int64_t n_vocab);

}  // namespace strata::eval
