// llama2.c checkpoints (Karpathy's legacy .bin format) and their tokenizer .bin, translated to
// GGUF tensor names and metadata keys.
//
// Checkpoint: 7 little-endian int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
// seq_len; a negative vocab_size means the classifier is stored separately), then f32 weights:
// token embedding [vocab, dim], attention norms [L, dim], wq [L, dim, dim], wk [L, kv_dim, dim],
// wv [L, kv_dim, dim], wo [L, dim, dim], ffn norms [L, dim], w1 [L, hidden, dim],
// w2 [L, dim, hidden], w3 [L, hidden, dim], final norm [dim], the rope tables
// [seq_len, head_dim/2] x 2 (ignored) and, when not shared, the classifier [vocab, dim]. Each
// matrix is row-major [out, in], which is GGUF's ne = {in, out}, so tensors are used in place
// from the memory map (4-byte aligned). llama2.c rotates adjacent pairs like GGUF: no permute.
//
// Tokenizer: int32 max_token_length, then per token f32 score, int32 length, bytes. llama2.c
// stores SentencePiece's U+2581 as a space and wraps <s>/</s> in newlines; both are undone so
// the vocabulary matches what llama.cpp's converter writes (tokenizer.ggml.model "llama").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/mapped_file.h"
#include "formats/model_file.h"

namespace strata {

struct Llama2cHeader {
  int32_t dim = 0;
  int32_t hidden_dim = 0;
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t vocab_size = 0;  // negative: separate classifier weights
  int32_t seq_len = 0;

  bool shared_classifier() const { return vocab_size > 0; }
  int64_t n_vocab() const { return vocab_size < 0 ? -static_cast<int64_t>(vocab_size) : vocab_size; }
  int64_t head_dim() const { return dim / n_heads; }
  int64_t kv_dim() const { return head_dim() * n_kv_heads; }
};

class Llama2cFile : public ModelFile {
 public:
  // Maps the checkpoint and reads its tokenizer: `tokenizer_path` if given, else tokenizer.bin or
  // a tok*.bin next to the checkpoint whose token count matches. Throws strata::Error.
  static std::unique_ptr<Llama2cFile> open(const std::string& path, const std::string& tokenizer_path = "");

  const Llama2cHeader& header() const { return header_; }
  const std::string& tokenizer_path() const { return tokenizer_path_; }

 private:
  Llama2cFile() = default;
  void add_tensors();

  MappedFile map_;
  Llama2cHeader header_;
  std::string tokenizer_path_;
};

inline constexpr size_t kLlama2cHeaderBytes = 28;

// Decodes the first kLlama2cHeaderBytes of a checkpoint (`size` bytes available) and validates
// it against `file_size`; throws strata::Error naming `name`.
Llama2cHeader parse_llama2c_header(const uint8_t* data, size_t size, uint64_t file_size,
                                   const std::string& name);

// True when `path` is a regular file whose first 28 bytes are a plausible llama2.c header
// whose implied size equals the file size.
bool looks_like_llama2c(const std::string& path);

// Adds tokenizer.ggml.* keys from a llama2.c tokenizer image holding exactly `n_vocab` tokens.
void add_llama2c_tokenizer_metadata(const uint8_t* data, size_t size, int64_t n_vocab,
                                    const std::string& name, Metadata& md);

}  // namespace strata
