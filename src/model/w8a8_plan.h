// Which weights a model loads as W8A8 (backend.h prepare_w8a8_matrix) and how their activations
// are quantized. W8A8 is a Strata-only layout made at load from F32/F16/BF16/Q8_0 weights; it is
// never written to a file.
#pragma once

#include <map>
#include <string>

namespace strata {

struct W8A8Plan {
  // false: per-token activation scales at run time (dynamic); true: one fixed scale per tensor,
  // act_absmax[name] / 127, from calibration (static).
  bool static_act = false;
  std::map<std::string, float> act_absmax;  // matrix name -> max |x| of its input (static)

  // The matrices made W8A8: every decoder-layer matrix ("blk.N.*") except MoE routers
  // (ffn_gate_inp, whose top-k choice is discontinuous in its logits). The output head and
  // the embeddings keep their type, as in SmoothQuant's W8A8 setups.
  static bool covers(const std::string& name) {
    return name.rfind("blk.", 0) == 0 && name.find("ffn_gate_inp") == std::string::npos;
  }
};

}  // namespace strata
