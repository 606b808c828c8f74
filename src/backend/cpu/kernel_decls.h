// Declarations of every per-(type, ISA) kernel getter and the shared activation quantizers.
//
// See kernels.h for the registration contract. A getter declared here but defined nowhere is
// harmless as long as kernel_registry.cpp does not list it.
#pragma once

#include <cstdint>

#include "backend/cpu/kernels.h"

namespace strata::cpu {

// Float and legacy quantized types (dot_<type>*.cpp).
const TypeKernels& f32_kernels_scalar();
const TypeKernels& f32_kernels_avx2();
const TypeKernels& f32_kernels_avx512();
const TypeKernels& f32_kernels_neon();
const TypeKernels& f16_kernels_scalar();
const TypeKernels& f16_kernels_avx2();
const TypeKernels& f16_kernels_avx512();
const TypeKernels& f16_kernels_neon();
const TypeKernels& bf16_kernels_scalar();
const TypeKernels& bf16_kernels_avx2();
const TypeKernels& bf16_kernels_avx512();
const TypeKernels& bf16_kernels_neon();
const TypeKernels& q4_0_kernels_scalar();
const TypeKernels& q4_0_kernels_avx2();
const TypeKernels& q4_0_kernels_avx512();
const TypeKernels& q4_1_kernels_scalar();
const TypeKernels& q4_1_kernels_avx2();
const TypeKernels& q4_1_kernels_avx512();
const TypeKernels& q5_0_kernels_scalar();
const TypeKernels& q5_0_kernels_avx2();
const TypeKernels& q5_0_kernels_avx512();
const TypeKernels& q5_1_kernels_scalar();
const TypeKernels& q5_1_kernels_avx2();
const TypeKernels& q5_1_kernels_avx512();
const TypeKernels& q8_0_kernels_scalar();
const TypeKernels& q8_0_kernels_avx2();
const TypeKernels& q8_0_kernels_avx512();

// K-quants (dot_q*_k*.cpp).
const TypeKernels& q2_k_kernels_scalar();
const TypeKernels& q2_k_kernels_avx2();
const TypeKernels& q2_k_kernels_avx512();
const TypeKernels& q3_k_kernels_scalar();
const TypeKernels& q3_k_kernels_avx2();
const TypeKernels& q3_k_kernels_avx512();
const TypeKernels& q4_k_kernels_scalar();
const TypeKernels& q4_k_kernels_avx2();
const TypeKernels& q4_k_kernels_avxvnni();
const TypeKernels& q4_k_kernels_avx512();
const TypeKernels& q5_k_kernels_scalar();
const TypeKernels& q5_k_kernels_avx2();
const TypeKernels& q5_k_kernels_avxvnni();
const TypeKernels& q5_k_kernels_avx512();
const TypeKernels& q6_k_kernels_scalar();
const TypeKernels& q6_k_kernels_avx2();
const TypeKernels& q6_k_kernels_avxvnni();
const TypeKernels& q6_k_kernels_avx512();

// IQ, ternary and MXFP4 types (dot_<type>*.cpp).
const TypeKernels& iq4_nl_kernels_scalar();
const TypeKernels& iq4_nl_kernels_avx2();
const TypeKernels& iq4_nl_kernels_avx512();
const TypeKernels& iq4_xs_kernels_scalar();
const TypeKernels& iq4_xs_kernels_avx2();
const TypeKernels& iq4_xs_kernels_avxvnni();
const TypeKernels& iq4_xs_kernels_avx512();
const TypeKernels& mxfp4_kernels_scalar();
const TypeKernels& mxfp4_kernels_avx2();
const TypeKernels& mxfp4_kernels_avx512();
const TypeKernels& tq1_0_kernels_scalar();
const TypeKernels& tq1_0_kernels_avx2();
const TypeKernels& tq1_0_kernels_avx512();
const TypeKernels& tq1_0_kernels_neon();
const TypeKernels& tq1_0_kernels_dotprod();
const TypeKernels& tq2_0_kernels_scalar();
const TypeKernels& tq2_0_kernels_avx2();
const TypeKernels& tq2_0_kernels_avx512();
const TypeKernels& tq2_0_kernels_neon();
const TypeKernels& tq2_0_kernels_dotprod();
const TypeKernels& iq2_xxs_kernels_scalar();
const TypeKernels& iq2_xxs_kernels_avx2();
const TypeKernels& iq2_xxs_kernels_avx512();
const TypeKernels& iq2_xxs_kernels_neon();
const TypeKernels& iq2_xxs_kernels_dotprod();
const TypeKernels& iq2_xs_kernels_scalar();
const TypeKernels& iq2_xs_kernels_avx2();
const TypeKernels& iq2_xs_kernels_avx512();
const TypeKernels& iq2_xs_kernels_neon();
const TypeKernels& iq2_xs_kernels_dotprod();
const TypeKernels& iq2_s_kernels_scalar();
const TypeKernels& iq2_s_kernels_avx2();
const TypeKernels& iq2_s_kernels_avx512();
const TypeKernels& iq2_s_kernels_neon();
const TypeKernels& iq2_s_kernels_dotprod();
const TypeKernels& iq3_xxs_kernels_scalar();
const TypeKernels& iq3_xxs_kernels_avx2();
const TypeKernels& iq3_xxs_kernels_avx512();
const TypeKernels& iq3_xxs_kernels_neon();
const TypeKernels& iq3_xxs_kernels_dotprod();
const TypeKernels& iq3_s_kernels_scalar();
const TypeKernels& iq3_s_kernels_avx2();
const TypeKernels& iq3_s_kernels_avx512();
const TypeKernels& iq3_s_kernels_neon();
const TypeKernels& iq3_s_kernels_dotprod();
const TypeKernels& iq1_s_kernels_scalar();
const TypeKernels& iq1_s_kernels_avx2();
const TypeKernels& iq1_s_kernels_avx512();
const TypeKernels& iq1_s_kernels_neon();
const TypeKernels& iq1_s_kernels_dotprod();
const TypeKernels& iq1_m_kernels_scalar();
const TypeKernels& iq1_m_kernels_avx2();
const TypeKernels& iq1_m_kernels_avx512();
const TypeKernels& iq1_m_kernels_neon();
const TypeKernels& iq1_m_kernels_dotprod();

// Activation quantizers, x: [n] f32 -> one row of the named type (n a multiple of its block).
// Q8_0 / Q8_1 follow llama.cpp: d = amax / 127, q = round(x / d) (ties to even), d stored as
// fp16; Q8_1 also stores s = fp16(d * sum(q)). Both are defined in act_q8_0*.cpp.
void quantize_row_q8_0_scalar(const float* x, void* y, int64_t n);
void quantize_row_q8_0_avx2(const float* x, void* y, int64_t n);
void quantize_row_q8_0_avx512(const float* x, void* y, int64_t n);
void quantize_row_q8_1_scalar(const float* x, void* y, int64_t n);
void quantize_row_q8_1_avx2(const float* x, void* y, int64_t n);
void quantize_row_q8_1_avx512(const float* x, void* y, int64_t n);
// Float activations (act_float*.cpp): round to nearest even, as core/fp16.h.
void quantize_row_f16_scalar(const float* x, void* y, int64_t n);
void quantize_row_f16_avx2(const float* x, void* y, int64_t n);
void quantize_row_f16_avx512(const float* x, void* y, int64_t n);
void quantize_row_bf16_scalar(const float* x, void* y, int64_t n);
void quantize_row_bf16_avx2(const float* x, void* y, int64_t n);
void quantize_row_bf16_avx512(const float* x, void* y, int64_t n);
void quantize_row_f32(const float* x, void* y, int64_t n);  // a copy
// Q8_K activations for the K-quants (act_q8_k*.cpp), as llama.cpp's quantize_row_q8_K:
// iscale = -127 / (the element of largest magnitude), q = round(iscale * x) (ties to even),
// d = 1 / iscale, bsums = sums of 16 q. Blocks whose largest magnitude is below kQ8KMinAmax
// (all zero, all NaN, denormal) are stored as zeros; NaN elements quantize to 0.
constexpr float kQ8KMinAmax = 1e-30f;
void quantize_row_q8_k_scalar(const float* x, void* y, int64_t n);
void quantize_row_q8_k_avx2(const float* x, void* y, int64_t n);
void quantize_row_q8_k_avx512(const float* x, void* y, int64_t n);

}  // namespace strata::cpu
