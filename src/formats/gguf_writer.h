// GGUF writer: metadata (every GGUF value type) and tensors into a GGUF v3 file.
//
// Tensor data is given either as a pointer (already in memory, e.g. a mapped source model) or
// as a callback that fills a buffer when the tensor is written, so a converter can produce one
// tensor at a time and never hold the whole model. The file is written to a temporary name in
// the target directory and renamed into place only once complete, so a failed or interrupted
// write never leaves a truncated model behind.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor_type.h"
#include "formats/metadata.h"

namespace strata {

// Writes exactly `nbytes` bytes of tensor data to `dst`.
using TensorFill = std::function<void(void* dst, size_t nbytes)>;

class GgufWriter {
 public:
  // Metadata written in insertion order. Its general.alignment (if any) sets the data alignment,
  // else 32 is used (and not written, as llama.cpp does).
  Metadata& metadata() { return metadata_; }
  void set_metadata(Metadata md) { metadata_ = std::move(md); }

  // ne: 1 to 4 dims, innermost first (GGUF order). `data` must stay valid until write() returns.
  // Throws strata::Error for a bad name (empty, over 64 bytes, duplicate), a type that cannot be
  // stored, or a shape that is negative, overflows or splits a block.
  void add_tensor(std::string name, TensorType type, const std::vector<int64_t>& ne, const void* data);
  void add_tensor(std::string name, TensorType type, const std::vector<int64_t>& ne, TensorFill fill);

  size_t tensor_count() const { return tensors_.size(); }

  // Writes the file (temp file + rename). `on_tensor`, when set, is called after each tensor is
  // written with its index (progress reporting). Throws strata::Error on I/O failure.
  void write(const std::string& path, const std::function<void(size_t index)>& on_tensor = {}) const;

 private:
  struct Entry {
    std::string name;
    TensorType type;
    int n_dims;
    std::array<int64_t, 4> ne;  // unused dims 1
    size_t nbytes;
    const void* data;  // or fill
    TensorFill fill;
  };
  void add_entry(std::string name, TensorType type, const std::vector<int64_t>& ne, const void* data,
                 TensorFill fill);
  uint64_t alignment() const;

  Metadata metadata_;
  std::vector<Entry> tensors_;
};

}  // namespace strata
