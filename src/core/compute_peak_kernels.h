// The per-ISA loops of compute_peak.cpp. Each runs `iters` rounds of kPeakChains independent
// multiply-adds on one register width and returns a value depending on all of them (so none is
// optimised away); the caller counts the work from the constants below.
#pragma once

#include <cstdint>

namespace strata::peak {

constexpr int kPeakChains = 12;  // independent accumulators: > latency x throughput on every level

// int8 multiply-adds per instruction and f32 multiply-adds per instruction.
constexpr int kMacsYmmInt8 = 32, kMacsZmmInt8 = 64, kMacsNeonInt8 = 16;
constexpr int kMacsYmmF32 = 8, kMacsZmmF32 = 16, kMacsNeonF32 = 4;
// AMX: one tdpbusd on 16 x 64-byte tiles is [16 x 64] x [64 x 16] int8 multiply-adds; its loop
// cycles kAmxChains accumulator tiles twice per round (kPeakChains products).
constexpr int kMacsAmxInt8 = 16 * 16 * 64;
constexpr int kAmxChains = kPeakChains / 2;

int64_t int8_chains_avx2(int64_t iters);     // vpmaddubsw ymm, accumulated with vpaddw
int64_t int8_chains_avxvnni(int64_t iters);  // vpdpbusd ymm
int64_t int8_chains_avx512(int64_t iters);   // vpdpbusd zmm
int64_t int8_chains_amx(int64_t iters);      // tdpbusd (configures this thread's tiles)
float f32_chains_avx2(int64_t iters);        // vfmadd231ps ymm
float f32_chains_avx512(int64_t iters);      // vfmadd231ps zmm
int64_t int8_chains_dotprod(int64_t iters);  // sdot v.4s
float f32_chains_neon(int64_t iters);        // fmla v.4s

}  // namespace strata::peak
