// The saved base run of `strata kld --save-base`: per scored position, the base model's
// log-probabilities over the whole vocabulary, so later runs need only the model under test.
//
// Format "SKLDBASE" version 1, little-endian, no padding:
//   header, 64 bytes:
//     char[8] magic "SKLDBASE"   u32 version (1)     u32 n_vocab
//     u64 n_ctx                  u64 stride          u64 n_windows
//     u64 n_text_tokens          u64 vocab fingerprint (vocab_fingerprint.h)
//     i32 bos (-1: windows keep their first token)   u32 reserved (0)
//   i32 tokens[n_text_tokens]: the tokenized text
//   one record per scored position, in window order (eval_windows.h), 16 + 2 * n_vocab bytes:
//     f32 nll    -log p_base(next token), exact
//     i32 top1   argmax of the base logits (lowest id on ties)
//     f32 lo     f32 step    u16 q[n_vocab]: log p_base(i) ~= lo + q[i] * step
//   u64 checksum: FNV-1a 64 of every byte before it.
// Log-probabilities are quantized linearly between the row's maximum and lo = max(minimum,
// maximum - 40): probabilities below e^-40 of the top one are clamped to it (they carry no
// weight in any metric). The error of a stored log-probability is at most step / 2 <= 3.1e-4
// nats; after decoding, the row is re-normalised, so the base is an exact distribution within
// that distance of the original and its KL divergence to the true base is of second order
// (~1e-8). The exact NLL and argmax are stored beside it, so PPL(base) and top-1 agreement do
// not depend on the quantization at all.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "eval/eval_windows.h"

namespace strata::eval {

struct BaseLogitsHeader {
  int64_t n_vocab = 0;
  int64_t n_ctx = 0;
  int64_t stride = 0;
  int64_t n_windows = 0;
  uint64_t vocab_fingerprint = 0;
  int32_t bos = -1;
  std::vector<int32_t> tokens;  // [n_text_tokens]
};

// One scored position of the base run.
struct BaseRow {
  std::vector<double> logp;  // [n_vocab] log-probabilities (normalised)
  double nll = 0.0;          // -log p(next token)
  int32_t top1 = 0;          // argmax of the base logits
};

class BaseLogitsWriter {
 public:
  // Writes to path + ".partial" and renames it to `path` in finish(), so an interrupted run never
  // leaves a file that looks complete. Throws strata::Error if the file cannot be created.
  BaseLogitsWriter(const std::string& path, const BaseLogitsHeader& header);
  ~BaseLogitsWriter();
  BaseLogitsWriter(const BaseLogitsWriter&) = delete;
  BaseLogitsWriter& operator=(const BaseLogitsWriter&) = delete;

  void write_row(const BaseRow& row);
  // Checks the row count against the header's windows, writes the checksum and renames.
  void finish();

 private:
  void put(const void* data, size_t n);

  std::string path_;
  std::string partial_path_;
  std::FILE* file_ = nullptr;
  int64_t n_vocab_ = 0;
  int64_t rows_expected_ = 0;
  int64_t rows_written_ = 0;
  uint64_t checksum_;
  std::vector<unsigned char> record_;  // [16 + 2 * n_vocab] encode buffer
};

class BaseLogitsReader {
 public:
  // Maps and fully validates the file (magic, version, sizes, token ids, window plan, every
  // record's fields, checksum); throws strata::Error "<path>: <what is wrong>" otherwise.
  explicit BaseLogitsReader(const std::string& path);

  const BaseLogitsHeader& header() const { return header_; }
  const WindowPlan& plan() const { return plan_; }
  int64_t n_rows() const { return n_rows_; }
  // Decodes record i (in [0, n_rows)) into `row`, re-normalising the log-probabilities.
  void read_row(int64_t i, BaseRow& row) const;

 private:
  void validate_header();
  void validate_records() const;

  MappedFile file_;
  BaseLogitsHeader header_;
  WindowPlan plan_;
  int64_t n_rows_ = 0;
  size_t records_offset_ = 0;
  size_t record_bytes_ = 0;
  mutable std::vector<double> scratch_;  // [n_vocab] decoded, before re-normalising
};

}  // namespace strata::eval
