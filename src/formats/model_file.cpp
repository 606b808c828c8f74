#include "formats/model_file.h"

#include <sys/stat.h>

#include "core/check.h"
#include "formats/gguf_reader.h"
#include "formats/hf_loader.h"
#include "formats/llama2c_loader.h"

namespace strata {

const TensorInfo* ModelFile::find_tensor(std::string_view name) const {
  for (const TensorInfo& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

size_t ModelFile::tensor_bytes() const {
  size_t total = 0;
  for (const TensorInfo& t : tensors_) total += t.nbytes;
  return total;
}

uint8_t* ModelFile::own_buffer(size_t n) {
  owned_buffers_.push_back(std::make_unique_for_overwrite<uint8_t[]>(n));
  return owned_buffers_.back().get();
}

std::unique_ptr<ModelFile> open_model_file(const std::string& path, const std::string& tokenizer_path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) STRATA_THROW(path, ": no such file or directory");
  if (S_ISDIR(st.st_mode)) {
    if (is_hf_model_dir(path)) return HfModelFile::open(path);
    STRATA_THROW(path, ": a directory without config.json is not a Hugging Face model");
  }
  if (has_gguf_magic(path)) return GgufFile::open(path);
  if (looks_like_llama2c(path)) return Llama2cFile::open(path, tokenizer_path);
  STRATA_THROW(path,
               ": unrecognized model format (not GGUF, not a Hugging Face directory with config.json, "
               "and not a llama2.c checkpoint: its header does not match the file size)");
}

}  // namespace strata
