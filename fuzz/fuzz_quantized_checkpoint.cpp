// libFuzzer target: GPTQ / AWQ checkpoints. An input starting with '{' is a config.json for
// parse_quantization_config; anything else is a safetensors image whose tensors named
// "w.qweight", "w.qzeros", "w.scales", "w.g_idx" are unpacked under each supported variant
// (GPTQ 4-bit v1, GPTQ 8-bit v2 with desc_act, AWQ 4-bit; group size from the image's first
// byte). Any input must either pass or throw strata::Error; crashes, sanitizer reports, hangs
// and huge allocations are bugs. fuzz_quantized_checkpoint.dict holds the field names.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/check.h"
#include "formats/quantized_checkpoint.h"
#include "formats/safetensors.h"

namespace {

void unpack_all(const strata::SafetensorsFile& f, int64_t group_size) {
  strata::PackedLinear p;
  p.qweight = f.find("w.qweight");
  p.qzeros = f.find("w.qzeros");
  p.scales = f.find("w.scales");
  p.g_idx = f.find("w.g_idx");
  using Method = strata::QuantizedCheckpointConfig::Method;
  const strata::QuantizedCheckpointConfig variants[] = {
      {Method::Gptq, 4, group_size, true, false},
      {Method::Gptq, 8, group_size, false, true},
      {Method::Awq, 4, group_size, false, false},
  };
  for (const auto& cfg : variants) {
    try {
      std::vector<std::unique_ptr<uint8_t[]>> buffers;
      const auto u = strata::unpack_quantized_linear(cfg, p, "fuzz", [&](size_t n) {
        buffers.push_back(std::make_unique<uint8_t[]>(n));
        return buffers.back().get();
      });
      if (u.nbytes == 1) return;
    } catch (const strata::Error&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  try {
    if (data[0] == '{') {
      strata::parse_quantization_config(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
      return 0;
    }
    // First byte: the group size (0 -> -1, else 32 * 2^(b % 4)); the rest: a safetensors image.
    const int64_t group_size = data[0] == 0 ? -1 : int64_t{32} << (data[0] % 4);
    const auto f = strata::SafetensorsFile::parse(data + 1, size - 1, "fuzz.safetensors");
    unpack_all(*f, group_size);
  } catch (const strata::Error&) {
  }
  return 0;
}
