// A model file whose tensors are those of a source file except the ones replaced: how the
// sequential calibrated quantizer runs the model with its first layers already quantized (and
// AWQ-folded) while it calibrates the next one. Replaced tensors point at the caller's buffers,
// which must outlive this file, as must the source.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "formats/model_file.h"

namespace strata::calib {

struct TensorOverride {
  TensorType type = TensorType::F32;
  const void* data = nullptr;
  size_t nbytes = 0;
};

// Throws strata::Error when an override's size does not match its tensor's shape.
std::unique_ptr<ModelFile> overlay_model_file(const ModelFile& source,
                                              const std::map<std::string, TensorOverride>& overrides);

}  // namespace strata::calib
