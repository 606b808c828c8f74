// Scale searches for formats whose levels are a fixed table of values instead of the integers
// (IQ4_NL / IQ4_XS's non-linear levels, MXFP4's E2M1 values): x ~ d * value[code].
#pragma once

#include <cstdint>

#include "core/fp16.h"

namespace strata::quant {

// The levels of a format, sorted by value, with the code that stores each.
struct LevelTable {
  int n = 0;
  float value[16] = {};
  uint8_t code[16] = {};
  float lowest() const { return value[0]; }
  float highest() const { return value[n - 1]; }
};
// kIq4nlValues and kMxfp4Values as tables (MXFP4's -0 code is left out: +0 stores zero).
const LevelTable& iq4nl_levels();
const LevelTable& mxfp4_levels();

// Index into t of the level nearest to v (ties to the lower one).
int nearest_level(const LevelTable& t, float v);

// Codes of x: [n] at the fixed scale d (nearest level of x / d; all code of 0 when d == 0) and
// the weighted squared error of the decoded values computed as float d * value.
double rtn_levels(const LevelTable& t, const float* x, const float* w, int n, float d, uint8_t* codes);

// Searches a signed scale d minimising sum(w (x - d value)^2): candidates map the element of
// largest magnitude onto each end of the table and onto nearby levels, each refitted by least
// squares. x: [n] finite values. Returns the error; *d the scale (0 for an all-zero block).
double search_level_scale(const LevelTable& t, const float* x, const float* w, int n, double* d);

// The fp16 scale and codes of a block whose search found d: d rounded to fp16, or the fp16 of the
// least-squares refit of its codes, whichever decodes closer. x, w: [n]; codes: [n].
fp16_t finalize_level_block(const LevelTable& t, const float* x, const float* w, int n, double d,
                            uint8_t* codes);

}  // namespace strata::quant
