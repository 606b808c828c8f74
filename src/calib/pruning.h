// Weight pruning: which weights of a matrix become zero, and the scores that choose them.
//
// Magnitude: score |W_ij|. Wanda (Sun et al. 2023, "A Simple and Effective Pruning Approach for
// Large Language Models"): score |W_ij| * ||X_j||_2, the weight times the norm of its input
// column over the calibration tokens. Both compare the weights of one output row (Wanda's
// comparison group; the magnitude baseline of Wanda's code thresholds the whole matrix instead,
// which lets rows end up with different sparsities). SparseGPT, which also moves the kept
// weights, is in sparsegpt.h.
//
// Patterns: unstructured (a fraction s of every row's weights zeroed) or N:M (in every group of M
// consecutive input weights of a row, N are zeroed: the convention of the Wanda and SparseGPT
// code, whose `prune_n:prune_m` / `prunen:prunem` count the pruned weights). NVIDIA's
// semi-structured sparsity counts the kept ones ("at most N non-zero of M"); the two agree for
// the patterns the hardware accelerates, 2:4 and 4:8, which are 50% sparse either way.
#pragma once

#include <cstdint>
#include <string>

namespace strata::calib {

enum class PruneMethod { Magnitude, Wanda, SparseGpt };
const char* prune_method_name(PruneMethod m);
// "magnitude", "wanda", "sparsegpt"; throws strata::Error otherwise.
PruneMethod parse_prune_method(const std::string& name);

struct SparsityPattern {
  double sparsity = 0;  // unstructured: fraction zeroed, in (0, 1); 0 for N:M
  int n = 0, m = 0;     // N:M: n zeroed in every m consecutive inputs (m = 0: unstructured)

  bool structured() const { return m > 0; }
  double fraction() const { return structured() ? static_cast<double>(n) / m : sparsity; }
  std::string describe() const;  // "50%" or "2:4"
};

// Throws strata::Error unless 0 < s < 1.
SparsityPattern unstructured_pattern(double s);
// "N:M" with 0 < N < M <= 256; throws strata::Error otherwise.
SparsityPattern parse_nm_pattern(const std::string& text);

// Weights zeroed in one row of n_in unstructured: round(s * n_in).
int64_t pruned_per_row(const SparsityPattern& p, int64_t n_in);

// Throws strata::Error when rows of n_in do not split into the pattern's groups of M.
void check_pattern_fits(const SparsityPattern& p, int64_t n_in, const std::string& tensor);

// score: [n_out, n_in]; pruned: [n_out, n_in] set to 1 where the weight is zeroed, 0 elsewhere.
// Per row (unstructured) or per group of M (N:M), the lowest scores are pruned; among equal
// scores the lower column first, so the mask is a function of the scores alone.
void select_row_mask(const float* score, int64_t n_out, int64_t n_in, const SparsityPattern& p,
                     uint8_t* pruned);

// score = |w| (col_norm null) or |w| * col_norm[column]. w, score: [n_out, n_in]; col_norm: [n_in].
void prune_scores(const float* w, int64_t n_out, int64_t n_in, const float* col_norm, float* score);

// Magnitude (col_norm null) or Wanda (col_norm[j] = ||X_j||_2 up to a common factor, e.g. the
// root mean square of input j): selects the mask and zeroes those weights of w in place.
// w, pruned: [n_out, n_in].
void prune_by_score(float* w, int64_t n_out, int64_t n_in, const float* col_norm, const SparsityPattern& p,
                    uint8_t* pruned);

}  // namespace strata::calib
