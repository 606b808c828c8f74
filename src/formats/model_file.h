// A model as read from disk, whatever its format: metadata in GGUF keys + named tensors.
//
// GGUF files are used as they are (tensors point into the memory map). llama2.c checkpoints
// and Hugging Face directories are translated on load into the same GGUF names and layouts
// (token_embd.weight, blk.N.attn_q.weight, ...; q/k rows in GGUF's interleaved-rope order),
// so everything above this layer sees one representation.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor_type.h"
#include "formats/metadata.h"

namespace strata {

struct TensorInfo {
  std::string name;
  TensorType type = TensorType::F32;
  int n_dims = 0;
  // ne[0] is the innermost (contiguous) dimension, as in GGUF; unused dims are 1.
  // A matrix [n_out, n_in] has ne = {n_in, n_out, 1, 1}.
  std::array<int64_t, 4> ne = {1, 1, 1, 1};
  // Points into a mapping or a buffer owned by the ModelFile; aligned to at least the element
  // size (F32: 4, F16/BF16: 2) and, in GGUF files, to general.alignment.
  const void* data = nullptr;
  size_t nbytes = 0;
  uint64_t file_offset = 0;  // GGUF only: offset relative to the data section

  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

enum class ModelFormat { Gguf, Llama2c, HuggingFace };

class ModelFile {
 public:
  virtual ~ModelFile() = default;

  ModelFormat format() const { return format_; }
  const std::string& path() const { return path_; }
  const Metadata& metadata() const { return metadata_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  // Total bytes of tensor data.
  size_t tensor_bytes() const;
  // The tensor's data is no longer needed in memory (a backend made its own copy): mapped file
  // pages are released from the resident set; they are read back from the file if used again.
  virtual void drop_tensor_pages(const TensorInfo& t) const { (void)t; }
  // The tensor's data will be read in place at random places (a lookup table): mapped file pages
  // are mapped now rather than faulted in one by one.
  virtual void populate_tensor_pages(const TensorInfo& t) const { (void)t; }

 protected:
  ModelFormat format_ = ModelFormat::Gguf;
  std::string path_;
  Metadata metadata_;
  std::vector<TensorInfo> tensors_;
  // A buffer of `n` bytes that lives as long as this file, for tensors that cannot be used in
  // place (permuted or realigned copies).
  uint8_t* own_buffer(size_t n);

  std::vector<std::unique_ptr<uint8_t[]>> owned_buffers_;
};

// Opens a model: a .gguf file, a llama2.c .bin checkpoint (tokenizer_path names its tokenizer
// .bin, else tokenizer.bin / tok*.bin next to it is looked for), or a Hugging Face directory
// (config.json + model.safetensors or model.safetensors.index.json). Detects the format from
// the content, not the extension. Throws strata::Error with a one-line message on any problem.
std::unique_ptr<ModelFile> open_model_file(const std::string& path, const std::string& tokenizer_path = "");

}  // namespace strata
