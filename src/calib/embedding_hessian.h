// The Hessian GPTQ quantizes an untied token embedding with.
//
// The embedding is a lookup, not a product: no calibration input reaches it, so the quantizers
// round it to nearest. But an error d in a token's row enters the residual stream unchanged,
// and the residual path carries it, to first order, straight to the final norm and the output
// matrix: the logits move by W_out diag(gamma / rms) d, with gamma the output norm's weight and
// rms the hidden state's root mean square (one number per token, which scales the error but not
// its direction). The squared error of the logits along that path is therefore
//   d^T diag(gamma) W_out^T W_out diag(gamma) d   (up to the per-token 1 / rms^2),
// a quadratic in the row's error shared by every token: GPTQ's setting with
// H = diag(gamma) W_out^T W_out diag(gamma), an [n_embd, n_embd] matrix from the weights alone.
// It ignores what the layers do to the error on the way (their own response to the changed
// input), which is why it is an option and measured, not assumed.
#pragma once

#include <cstdint>
#include <vector>

namespace strata {
class ThreadPool;
}

namespace strata::calib {

// w_out: [n_vocab, n_embd] the output matrix; gamma: [n_embd] the output norm's weight (null:
// ones). Returns [n_embd, n_embd] diag(gamma) W_out^T W_out diag(gamma) / n_vocab.
std::vector<float> embedding_hessian(const float* w_out, int64_t n_vocab, int64_t n_embd, const float* gamma,
                                     ThreadPool* pool);

}  // namespace strata::calib
