// libFuzzer target: the importance-matrix reader (llama.cpp's GGUF imatrix and legacy .dat,
// with Strata's extra tensors) over arbitrary bytes. Any input must either parse or throw
// strata::Error; crashes, sanitizer reports, hangs and huge allocations are bugs.
#include <cstddef>
#include <cstdint>

#include "calib/imatrix_file.h"
#include "core/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto f = strata::calib::parse_calibration_file(data, size, "fuzz.imatrix");
    // Use what `strata quantize` would: every matrix's importance, mean |x| and Gram matrix.
    double sink = 0;
    for (const auto& [name, st] : f.stats)
      for (int m = 0; m < st.n_mat; ++m) {
        for (float v : st.importance(m)) sink += v;
        for (float v : st.mean_abs(m)) sink += v;
        if (const auto* g = st.gram_of(m)) sink += g->g.empty() ? 0.0 : g->g[0];
      }
    if (sink == 1.5) return 0;  // keeps the reads from being optimised away
  } catch (const strata::Error&) {
  }
  return 0;
}
