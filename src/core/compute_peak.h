// Measures the arithmetic peaks of the kernels' ISA level, the compute roofline of prefill: a
// GEMM doing N int8 multiply-adds cannot take less than 2N / int8_ops_per_second seconds.
// Each thread of the pool runs independent chains of the level's widest multiply-add with nothing
// else in the loop (the instruction each level's kernels are built on):
//   level     int8                          f32
//   avx2      vpmaddubsw ymm (+ vpaddw)     vfmadd ymm
//   avxvnni   vpdpbusd ymm                  vfmadd ymm
//   avx512    vpdpbusd zmm                  vfmadd zmm
//   amx       tdpbusd (16 x 64-byte tiles)  vfmadd zmm
//   neon      (none)                        fmla v.4s
//   dotprod   sdot v.4s                     fmla v.4s
//   i8mm      sdot v.4s                     fmla v.4s
// Scalar has no peak kernel (both rates 0). Ops count 2 per multiply-add.
#pragma once

#include <string>

#include "core/cpu_features.h"

namespace strata {

class ThreadPool;

struct ComputePeak {
  IsaLevel level = IsaLevel::Scalar;  // the level measured (the request, clamped to the CPU)
  double int8_ops_per_second = 0.0;   // 0: no int8 peak kernel at this level
  double f32_flops = 0.0;             // 0: no f32 peak kernel at this level
  std::string int8_what, f32_what;    // the instruction measured ("vpdpbusd ymm")
  int threads = 0;
};

// Best of `passes` timed passes of all pool threads at once (after a warm-up pass, which also
// lets the cores reach their AVX frequency). passes >= 1.
ComputePeak measure_compute_peak(ThreadPool& pool, IsaLevel level, int passes = 3);

}  // namespace strata
