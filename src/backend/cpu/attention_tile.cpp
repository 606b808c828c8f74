// Scalar reference of the attention tile steps (attention_tile.h), and the ISA dispatch.
#include "backend/cpu/attention_tile.h"

#include <cmath>

#include "backend/cpu/fast_math.h"

namespace strata::cpu {
namespace {

void scores(const float* const* q, int n_rows, const float* kt, int hd, int bs, float* s) {
  for (int r = 0; r < n_rows; ++r) {
    float* sr = s + r * bs;
    for (int j = 0; j < bs; ++j) sr[j] = 0.0f;
    for (int e = 0; e < hd; ++e) {
      const float qe = q[r][e];
      const float* ke = kt + e * bs;
      for (int j = 0; j < bs; ++j) sr[j] += qe * ke[j];
    }
  }
}

void softmax(const float* s, int n_rows, int bs, int first, int last, ScoreMap sm, float* m, float* l,
             float* p, float* corr) {
  for (int r = 0; r < n_rows; ++r) {
    float x[32];
    float smax = m[r];
    for (int j = first; j <= last; ++j) {
      x[j] = s[r * bs + j] * sm.pre;
      if (sm.cap > 0.0f) x[j] = sm.cap * fast_tanh(x[j]);
      smax = std::max(smax, x[j]);
    }
    float* pr = p + r * bs;
    float lsum = 0.0f;
    for (int j = 0; j < bs; ++j) {
      pr[j] = (j >= first && j <= last) ? fast_exp(x[j] - smax) : 0.0f;
      lsum += pr[j];
    }
    corr[r] = 1.0f;
    if (m[r] != -INFINITY) {
      corr[r] = fast_exp(m[r] - smax);
      lsum += l[r] * corr[r];
    }
    m[r] = smax;
    l[r] = lsum;
  }
}

void accumulate(float* const* acc, int n_rows, const float* p, int bs, const float* v, int hd_v, int first,
                int last, const float* corr) {
  for (int r = 0; r < n_rows; ++r) {
    float* a = acc[r];
    for (int e = 0; e < hd_v; ++e) a[e] *= corr[r];
    for (int j = first; j <= last; ++j) {
      const float pj = p[r * bs + j];
      const float* vj = v + static_cast<int64_t>(j) * hd_v;
      for (int e = 0; e < hd_v; ++e) a[e] += pj * vj[e];
    }
  }
}

constexpr AttentionTileKernels kKernels = {scores, softmax, accumulate};

}  // namespace

const AttentionTileKernels& attention_tile_kernels_scalar() {
  return kKernels;
}

const AttentionTileKernels& attention_tile_kernels(IsaLevel isa) {
  switch (clamp_isa(isa)) {
#if defined(__x86_64__)  // the x86 kernels are not built on aarch64
    case IsaLevel::Amx:  // AMX tiles serve the packed and W8A8 GEMMs only
    case IsaLevel::Avx512:
      return attention_tile_kernels_avx512();
    case IsaLevel::AvxVnni:  // AVX-VNNI CPUs run the AVX2 kernels here
    case IsaLevel::Avx2:
      return attention_tile_kernels_avx2();
#endif
#if defined(__aarch64__)  // every aarch64 level runs the NEON kernels here
    case IsaLevel::Neon:
    case IsaLevel::NeonDotprod:
    case IsaLevel::NeonI8mm:
      return attention_tile_kernels_neon();
#endif
    case IsaLevel::Scalar:
    default:
      break;
  }
  return attention_tile_kernels_scalar();
}

}  // namespace strata::cpu
