// Safetensors files: an 8-byte little-endian header length, a JSON header
// {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}, then the
// tensor bytes (offsets relative to the end of the header). Mapped and used in place.
//
// The header is validated as untrusted input: length bounded by the file (and 100 MB), valid
// JSON object, known dtype, shape product * dtype size == end - begin without overflow, every
// range inside the file and no two ranges overlapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"

namespace strata {

struct SafetensorsTensor {
  std::string name;
  std::string dtype;           // "F32", "F16", "BF16", "I8", ...
  std::vector<int64_t> shape;  // outermost first, as in PyTorch: a Linear weight is [out, in]
  const uint8_t* data = nullptr;
  size_t nbytes = 0;
};

class SafetensorsFile {
 public:
  // Maps and validates `path`. Throws strata::Error naming the file.
  static std::unique_ptr<SafetensorsFile> open(const std::string& path);
  // Validates an image in memory; `data` must outlive the result.
  static std::unique_ptr<SafetensorsFile> parse(const void* data, size_t size, const std::string& name);

  const std::string& path() const { return path_; }
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* find(const std::string& name) const;
  // The string entries of "__metadata__".
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;
  void parse_image(const uint8_t* data, size_t size);

  MappedFile map_;
  std::string path_;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// Bytes per element of a safetensors dtype; 0 when the dtype is unknown.
size_t safetensors_dtype_size(const std::string& dtype);

}  // namespace strata
