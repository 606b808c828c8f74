// Scale searches shared by the quantizers: the building blocks every format is made of.
//
// All searches minimise the weighted squared error sum(w * (x - x_hat)^2). They assume finite
// input (see sanitize_block) and accumulate in double so that values up to FLT_MAX cannot
// overflow the sums.
#pragma once

#include <cstdint>

#include "core/fp16.h"

namespace strata::quant {

// Largest elements in any block or sub-block a search is given (a K-quant super-block).
constexpr int kMaxSearchElements = 256;

// Copies x: [n] replacing NaN by 0 and +-inf by +-FLT_MAX, so that every search sees finite
// values (they are then clamped to what the format can represent).
void sanitize_block(const float* x, float* out, int n);

// Error weights for a block: importance: [n] or null. Negative or non-finite importance counts as
// 0; a block whose importance is all zero gets uniform weights (nothing to prefer).
void block_weights(const float* importance, float* w, int n);

// Rounds v to the nearest half, clamping to the largest finite half (never inf or NaN).
fp16_t to_fp16_clamped(double v);
// As to_fp16_clamped, for scales: a non-zero v too small for a half becomes the smallest
// subnormal of its sign rather than 0, so that tiny blocks keep a usable scale.
fp16_t to_fp16_scale(double v);
inline float fp16_value(double v) {
  return fp16_to_f32(to_fp16_clamped(v));
}

// Nearest integer of v (half to even), clamped to [lo, hi]; NaN gives lo. Clamps by selects, not
// branches (levels are data-dependent and would mispredict), and rounds by adding and removing
// 1.5 * 2^52, which leaves no fraction bits (rint is a libm call on baseline x86-64).
inline int round_clamp(double v, int lo, int hi) {
  constexpr double kMagic = 6755399441055744.0;
  v = v > lo ? v : lo;
  v = v < hi ? v : hi;
  return static_cast<int>((v + kMagic) - kMagic);
}

// Window of inverse scales examined by the exact scale search, in units of the level given to
// the element of largest magnitude: t = amax / d. [t_lo, t_hi] = [0, inf) searches everything.
struct SearchWindow {
  double t_lo;
  double t_hi;
};

// Exact search of a signed scale: finds d and levels L_i in [-neg, pos] minimising
// sum(w (x - d L)^2), among all level vectors round(x / d') whose t lies in the window, each
// with its least-squares d. The sign of d gives the element of largest magnitude the side with
// more levels. Returns d (0 for an all-zero block); L: [n]. Also returns the error via err.
double search_signed_scale(const float* x, const float* w, int n, int neg, int pos, SearchWindow window,
                           int* L, double* err = nullptr);

// As search_signed_scale, for d > 0 only (x is then usually non-negative, e.g. sub-block scales).
double search_positive_scale(const float* x, const float* w, int n, int neg, int pos, SearchWindow window,
                             int* L, double* err = nullptr);

// Round to nearest with a fixed scale: L = clamp(round(x / d), -neg, pos); returns the error.
double rtn_symmetric(const float* x, const float* w, int n, int neg, int pos, float d, int* L);

// Least-squares d for fixed levels: sum(w x L) / sum(w L^2); 0 when all L are 0.
double lsq_scale(const float* x, const float* w, int n, const int* L);

// Affine fit x ~ scale * L + offset with L in [0, nmax] and scale >= 0; with
// nonpositive_offset the offset is kept <= 0 (K-quant mins). Multi-start alternating
// least squares. L: [n].
struct AffineFit {
  double scale = 0;
  double offset = 0;
  double err = 0;
};
AffineFit search_affine(const float* x, const float* w, int n, int nmax, bool nonpositive_offset, int* L);

// Round to nearest with fixed scale and offset, evaluated the way dequantization computes it
// (x_hat = scale * L + offset in float); returns the error. scale == 0 gives L = 0.
double rtn_affine(const float* x, const float* w, int n, int nmax, float scale, float offset, int* L);

// Least-squares (scale, offset) for fixed levels. Keeps `fit` unchanged when the system is
// singular (all levels equal). With nonpositive_offset the offset is clamped to <= 0.
void lsq_affine(const float* x, const float* w, int n, const int* L, bool nonpositive_offset, AffineFit* fit);

// Finalises a legacy symmetric block (Q4_0, Q5_0, Q8_0): starting from the scale d, alternates
// fp16 rounding of d, round-to-nearest levels and a least-squares refit; keeps the best.
// Returns the fp16 scale; L: [n] levels in [-neg, pos].
fp16_t finalize_symmetric(const float* x, const float* w, int n, int neg, int pos, double d, int* L);

// Same for the legacy affine blocks (Q4_1, Q5_1): x_hat = d * L + m with fp16 d and m.
void finalize_affine(const float* x, const float* w, int n, int nmax, AffineFit fit, fp16_t* d, fp16_t* m,
                     int* L);

}  // namespace strata::quant
