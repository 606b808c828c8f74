// Dispatch from TensorType to the per-type codecs, row splitting across the thread pool, and the
// fallback type for rows that do not fit a type's blocks.
#include "quant/quantize.h"

#include <algorithm>

#include "core/check.h"
#include "core/thread_pool.h"
#include "quant/codecs.h"

namespace strata {
namespace {

struct Codec {
  quant::DequantizeFn dequantize;
  quant::QuantizeFn quantize;
};

Codec codec_for(TensorType type) {
  using namespace quant;
  switch (type) {
    case TensorType::F32:
      return {dequantize_f32, quantize_f32};
    case TensorType::F16:
      return {dequantize_f16, quantize_f16};
    case TensorType::BF16:
      return {dequantize_bf16, quantize_bf16};
    case TensorType::Q4_0:
      return {dequantize_q4_0, quantize_q4_0};
    case TensorType::Q4_1:
      return {dequantize_q4_1, quantize_q4_1};
    case TensorType::Q5_0:
      return {dequantize_q5_0, quantize_q5_0};
    case TensorType::Q5_1:
      return {dequantize_q5_1, quantize_q5_1};
    case TensorType::Q8_0:
      return {dequantize_q8_0, quantize_q8_0};
    case TensorType::Q8_1:
      return {dequantize_q8_1, quantize_q8_1};
    case TensorType::Q2_K:
      return {dequantize_q2_k, quantize_q2_k};
    case TensorType::Q3_K:
      return {dequantize_q3_k, quantize_q3_k};
    case TensorType::Q4_K:
      return {dequantize_q4_k, quantize_q4_k};
    case TensorType::Q5_K:
      return {dequantize_q5_k, quantize_q5_k};
    case TensorType::Q6_K:
      return {dequantize_q6_k, quantize_q6_k};
    case TensorType::Q8_K:
      return {dequantize_q8_k, quantize_q8_k};
    case TensorType::IQ4_NL:
      return {dequantize_iq4_nl, quantize_iq4_nl};
    case TensorType::IQ4_XS:
      return {dequantize_iq4_xs, quantize_iq4_xs};
    case TensorType::MXFP4:
      return {dequantize_mxfp4, quantize_mxfp4};
    case TensorType::TQ1_0:
      return {dequantize_tq1_0, quantize_tq1_0};
    case TensorType::TQ2_0:
      return {dequantize_tq2_0, quantize_tq2_0};
    case TensorType::IQ2_XXS:
      return {dequantize_iq2_xxs, quantize_iq2_xxs};
    case TensorType::IQ2_XS:
      return {dequantize_iq2_xs, quantize_iq2_xs};
    case TensorType::IQ2_S:
      return {dequantize_iq2_s, quantize_iq2_s};
    case TensorType::IQ3_XXS:
      return {dequantize_iq3_xxs, quantize_iq3_xxs};
    case TensorType::IQ3_S:
      return {dequantize_iq3_s, quantize_iq3_s};
    case TensorType::IQ1_S:
      return {dequantize_iq1_s, quantize_iq1_s};
    case TensorType::IQ1_M:
      return {dequantize_iq1_m, quantize_iq1_m};
  }
  STRATA_CHECK(false, "no codec for tensor type id ", static_cast<uint32_t>(type));
}

void check_row(TensorType type, int64_t n) {
  const int64_t block = type_traits(type).block_size;
  STRATA_CHECK(n >= 0 && n % block == 0, "row of ", n, " elements is not a whole number of ", type_name(type),
               " blocks");
}

// The codec's quantizer, or a clear error for a type without one.
quant::QuantizeFn quantizer_for(TensorType type) {
  const quant::QuantizeFn q = codec_for(type).quantize;
  if (!q) STRATA_THROW("quantizing to ", type_name(type), " is not supported");
  return q;
}

}  // namespace

bool can_quantize(TensorType type) {
  return codec_for(type).quantize != nullptr;
}

bool quantize_requires_imatrix(TensorType type) {
  return type == TensorType::IQ2_XXS || type == TensorType::IQ2_XS || type == TensorType::IQ2_S ||
         type == TensorType::IQ1_S || type == TensorType::IQ1_M;
}

void dequantize_row(TensorType type, const void* src, float* dst, int64_t n) {
  check_row(type, n);
  codec_for(type).dequantize(src, dst, n);
}

size_t quantize_row(TensorType type, const float* src, void* dst, int64_t n, const float* importance) {
  check_row(type, n);
  quantizer_for(type)(src, dst, n, importance);
  return row_bytes(type, n);
}

size_t quantize_rows(TensorType type, const float* src, void* dst, int64_t n_rows, int64_t n_per_row,
                     const float* importance, ThreadPool* pool) {
  check_row(type, n_per_row);
  STRATA_CHECK(n_rows >= 0);
  const size_t bytes_per_row = row_bytes(type, n_per_row);
  const quant::QuantizeFn quantize = quantizer_for(type);
  auto rows = [&](int64_t begin, int64_t end, int) {
    for (int64_t r = begin; r < end; ++r)
      quantize(src + r * n_per_row, static_cast<char*>(dst) + r * bytes_per_row, n_per_row, importance);
  };
  if (pool && pool->size() > 1 && n_rows > 1) {
    // Chunks of roughly 64K elements: small enough to balance, large enough to amortise dispatch.
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, n_per_row));
    pool->parallel_for(n_rows, grain, rows);
  } else {
    rows(0, n_rows, 0);
  }
  return static_cast<size_t>(n_rows) * bytes_per_row;
}

TensorType fallback_type(TensorType wanted, int64_t row_len) {
  auto fits = [row_len](TensorType t) { return row_len % type_traits(t).block_size == 0; };
  if (fits(wanted)) return wanted;
  // llama.cpp's substitutes (llama-quant.cpp).
  TensorType next = TensorType::F16;
  switch (wanted) {
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::IQ4_XS:
    case TensorType::IQ2_XXS:
    case TensorType::IQ2_XS:
    case TensorType::IQ2_S:
    case TensorType::IQ3_XXS:
    case TensorType::IQ3_S:
    case TensorType::IQ1_S:
    case TensorType::IQ1_M:
      next = TensorType::IQ4_NL;
      break;
    case TensorType::TQ1_0:
    case TensorType::TQ2_0:
      next = TensorType::Q4_0;
      break;
    case TensorType::Q4_K:
      next = TensorType::Q5_0;
      break;
    case TensorType::Q5_K:
      next = TensorType::Q5_1;
      break;
    case TensorType::Q6_K:
    case TensorType::Q8_K:
      next = TensorType::Q8_0;
      break;
    default:
      break;
  }
  return fits(next) ? next : TensorType::F16;
}

uint32_t llama_file_type(TensorType t) {
  switch (t) {
    case TensorType::F32:
      return 0;
    case TensorType::F16:
      return 1;
    case TensorType::Q4_0:
      return 2;
    case TensorType::Q4_1:
      return 3;
    case TensorType::Q8_0:
      return 7;
    case TensorType::Q5_0:
      return 8;
    case TensorType::Q5_1:
      return 9;
    case TensorType::Q2_K:
      return 10;
    case TensorType::Q3_K:
      return 11;
    case TensorType::Q4_K:
      return 14;
    case TensorType::Q5_K:
      return 16;
    case TensorType::Q6_K:
      return 18;
    case TensorType::IQ2_XXS:
      return 19;
    case TensorType::IQ2_XS:
      return 20;
    case TensorType::IQ3_XXS:
      return 23;
    case TensorType::IQ1_S:
      return 24;
    case TensorType::IQ4_NL:
      return 25;
    case TensorType::IQ3_S:
      return 26;
    case TensorType::IQ2_S:
      return 28;
    case TensorType::IQ4_XS:
      return 30;
    case TensorType::IQ1_M:
      return 31;
    case TensorType::BF16:
      return 32;
    case TensorType::TQ1_0:
      return 36;
    case TensorType::TQ2_0:
      return 37;
    case TensorType::MXFP4:
      return 38;  // llama.cpp's MXFP4_MOE, the all-MXFP4 file type
    default:
      STRATA_THROW("cannot quantize to ", type_name(t));
  }
}

}  // namespace strata
