// GGUF reader: metadata and tensor directory of a .gguf file, tensors used in place (zero-copy).
//
// Supports GGUF v2 and v3 (little-endian). Every field read from the file is validated before it
// is used or allocated for, so a truncated or hostile file produces a one-line strata::Error
// naming the file and the problem, never a crash or a huge allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/mapped_file.h"
#include "formats/model_file.h"

namespace strata {

// "GGUF" read as a little-endian u32.
inline constexpr uint32_t kGgufMagic = 0x46554747u;
inline constexpr uint64_t kGgufDefaultAlignment = 32;
inline constexpr int kGgufMaxDims = 4;

class GgufFile : public ModelFile {
 public:
  // Maps `path` and parses it. TensorInfo::data points into the mapping, which lives as long as
  // the returned object.
  static std::unique_ptr<GgufFile> open(const std::string& path);

  // Parses a GGUF image already in memory (fuzzing, tests). `data` must outlive the result:
  // tensors point into it. `name` stands for the file in error messages.
  static std::unique_ptr<GgufFile> parse(const void* data, size_t size, const std::string& name);

  uint32_t version() const { return version_; }
  // general.alignment, or 32 when absent.
  uint64_t alignment() const { return alignment_; }
  // Byte offset of the tensor data section in the file (TensorInfo::file_offset is relative to it).
  uint64_t data_offset() const { return data_offset_; }
  void drop_tensor_pages(const TensorInfo& t) const override { map_.drop_pages(t.data, t.nbytes); }
  void populate_tensor_pages(const TensorInfo& t) const override { map_.populate(t.data, t.nbytes); }

 private:
  GgufFile() = default;
  void parse_image(const uint8_t* data, size_t size);

  MappedFile map_;  // empty for parse()
  uint32_t version_ = 0;
  uint64_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
};

// Name of a ggml type id for messages: "q4_K", "iq2_xxs", ... or "type N" when unknown.
std::string ggml_type_display_name(uint32_t id);

// True when the first bytes of `path` are the GGUF magic (false if unreadable or too short).
bool has_gguf_magic(const std::string& path);

}  // namespace strata
