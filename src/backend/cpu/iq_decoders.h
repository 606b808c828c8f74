// The scalar decoders of the IQ and ternary types (defined in dot_<type>.cpp): one super-block of
// 256 -> w[256] int8, sc[16] (one small integer per 16 elements), returning the float factor f,
// so that x[e] = f * sc[e / 16] * w[e] (iq_scalar_dot.h). The scalar reference kernels and the
// NEON ones (iq_tile_neon.h) are built on them.
#pragma once

#include <cstdint>

namespace strata::cpu {

using IqDecodeFn = float (*)(const uint8_t* blk, int8_t* w, int* sc);

float iq2_xxs_decode(const uint8_t* blk, int8_t* w, int* sc);
float iq2_xs_decode(const uint8_t* blk, int8_t* w, int* sc);
float iq2_s_decode(const uint8_t* blk, int8_t* w, int* sc);
float iq3_xxs_decode(const uint8_t* blk, int8_t* w, int* sc);
float iq3_s_decode(const uint8_t* blk, int8_t* w, int* sc);
float iq1_s_decode(const uint8_t* blk, int8_t* w, int* sc);
float iq1_m_decode(const uint8_t* blk, int8_t* w, int* sc);
float tq1_0_decode(const uint8_t* blk, int8_t* w, int* sc);
float tq2_0_decode(const uint8_t* blk, int8_t* w, int* sc);

}  // namespace strata::cpu
