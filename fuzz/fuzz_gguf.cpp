// libFuzzer target: the GGUF parser over arbitrary bytes, then the model hyper-parameter checks
// over whatever metadata parsed. Any input must either pass or throw strata::Error; crashes,
// sanitizer reports, hangs and huge allocations are bugs. fuzz_gguf.dict holds the GGUF keys of
// the supported architectures (run with -dict=fuzz/fuzz_gguf.dict).
#include <cstddef>
#include <cstdint>

#include "core/check.h"
#include "formats/gguf_reader.h"
#include "model/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto f = strata::GgufFile::parse(data, size, "fuzz.gguf");
    // Touch what a loader would: every metadata value and every tensor byte.
    size_t sink = 0;
    for (const auto& [key, value] : f->metadata().entries()) sink += value.to_display_string().size();
    for (const auto& t : f->tensors()) {
      const auto* p = static_cast<const uint8_t*>(t.data);
      for (size_t i = 0; i < t.nbytes; ++i) sink += p[i];
    }
    if (sink == 1) return 0;  // keeps the reads from being optimised away
    const strata::ModelConfig c = strata::ModelConfig::from_metadata(f->metadata());
    if (c.n_layer == 0) return 0;
  } catch (const strata::Error&) {
  }
  return 0;
}
