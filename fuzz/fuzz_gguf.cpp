// libFuzzer target: the GGUF parser over arbitrary bytes. Any input must either parse or throw
// strata::Error; crashes, sanitizer reports, hangs and huge allocations are bugs.
#include <cstddef>
#include <cstdint>

#include "core/check.h"
#include "formats/gguf_reader.h"

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
  } catch (const strata::Error&) {
  }
  return 0;
}
