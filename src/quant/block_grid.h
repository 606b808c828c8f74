// The per-element grid of a quantized block: once a block's parameters (scales, mins, exponents)
// are fixed, each element can take one of a few values. GPTQ and SparseGPT quantize a matrix
// column by column with the parameters of each GGUF block chosen at the block's start, so they
// need to know those values and to write levels into a block without touching its parameters.
//
// An element's value at level l is  scale * v(l) + offset,  v(l) = table[l] for the non-linear
// types (IQ4_NL, IQ4_XS, MXFP4) and l + bias otherwise, evaluated in float exactly as the type's
// dequantizer does (so grid_value equals dequantize_row bit for bit; tests/quant checks it).
#pragma once

#include <cstdint>

#include "core/tensor_type.h"

namespace strata {

struct ElementGrid {
  float scale = 0.0f;
  float offset = 0.0f;
  int bias = 0;                  // integer grids: v(l) = l + bias
  int n_levels = 0;              // levels 0 .. n_levels - 1
  const float* table = nullptr;  // non-linear grids: v(l) = table[l] ([n_levels], any order)
};

// True for the types whose blocks this file can decode and re-level: Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, Q2_K .. Q6_K, IQ4_NL, IQ4_XS, MXFP4, TQ1_0, TQ2_0.
bool has_block_grid(TensorType type);

// The grid of every element of one block. block: block_bytes of `type`; grids: [block_size].
void block_grids(TensorType type, const void* block, ElementGrid* grids);

// The level of every element. levels: [block_size].
void block_levels(TensorType type, const void* block, int* levels);

// Writes levels ([block_size], each in [0, n_levels) of its grid) into the block, keeping its
// parameters.
void set_block_levels(TensorType type, void* block, const int* levels);

inline float grid_value(const ElementGrid& g, int level) {
  const float v = g.table ? g.table[level] : static_cast<float>(level + g.bias);
  return g.offset == 0.0f ? g.scale * v : g.scale * v + g.offset;
}

// The level whose value is nearest to x (the lower level on a tie); NaN gives the level nearest
// to 0.
int nearest_level(const ElementGrid& g, float x);

}  // namespace strata
