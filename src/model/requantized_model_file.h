// A model file whose weight matrices are re-quantized in memory to another type: the target of
// a quantized self-draft (QSpec-style speculation with no second file) is the same model at,
// say, Q4_0. Norms, biases and rows that do not fit the type's blocks are kept as they are.
#pragma once

#include <memory>

#include "core/tensor_type.h"
#include "formats/model_file.h"

namespace strata {

class ThreadPool;

// `source` must outlive the result (unchanged tensors point into it). Matrices already stored
// in `type` are shared, not copied.
std::unique_ptr<ModelFile> requantize_model_file(const ModelFile& source, TensorType type, ThreadPool* pool);

}  // namespace strata
