// Per-type row codecs behind quant/quantize.h's dispatcher (internal to the quant layer).
//
// Every function handles n elements, n a multiple of the type's block size (checked by the
// dispatcher). quantize_*: src [n] f32 -> dst row_bytes(type, n) bytes; importance: [n] or null.
// dequantize_*: src row -> dst [n] f32, bit-exact with the GGUF definitions.
#pragma once

#include <cstdint>

namespace strata::quant {

using DequantizeFn = void (*)(const void* src, float* dst, int64_t n);
using QuantizeFn = void (*)(const float* src, void* dst, int64_t n, const float* importance);

#define STRATA_DECLARE_CODEC(name)                                \
  void dequantize_##name(const void* src, float* dst, int64_t n); \
  void quantize_##name(const float* src, void* dst, int64_t n, const float* importance)

STRATA_DECLARE_CODEC(f32);
STRATA_DECLARE_CODEC(f16);
STRATA_DECLARE_CODEC(bf16);
STRATA_DECLARE_CODEC(q4_0);
STRATA_DECLARE_CODEC(q4_1);
STRATA_DECLARE_CODEC(q5_0);
STRATA_DECLARE_CODEC(q5_1);
STRATA_DECLARE_CODEC(q8_0);
STRATA_DECLARE_CODEC(q8_1);
STRATA_DECLARE_CODEC(q2_k);
STRATA_DECLARE_CODEC(q3_k);
STRATA_DECLARE_CODEC(q4_k);
STRATA_DECLARE_CODEC(q5_k);
STRATA_DECLARE_CODEC(q6_k);
STRATA_DECLARE_CODEC(q8_k);
STRATA_DECLARE_CODEC(iq4_nl);
STRATA_DECLARE_CODEC(iq4_xs);
STRATA_DECLARE_CODEC(mxfp4);
STRATA_DECLARE_CODEC(tq1_0);
STRATA_DECLARE_CODEC(tq2_0);
STRATA_DECLARE_CODEC(iq2_xxs);
STRATA_DECLARE_CODEC(iq2_xs);
STRATA_DECLARE_CODEC(iq2_s);
STRATA_DECLARE_CODEC(iq3_xxs);
STRATA_DECLARE_CODEC(iq3_s);
STRATA_DECLARE_CODEC(iq1_s);
STRATA_DECLARE_CODEC(iq1_m);

#undef STRATA_DECLARE_CODEC

}  // namespace strata::quant
