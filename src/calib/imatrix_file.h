// llama.cpp's importance-matrix files, read and written, plus Strata's extensions.
//
// GGUF format (llama-imatrix's default since 2025): general.type = "imatrix",
// imatrix.datasets (array of strings), imatrix.chunk_count and imatrix.chunk_size (u32); per
// weight matrix NAME, in name order, the F32 tensors NAME.in_sum2 [n_in, n_mat] (sum of x^2 over
// the rows seen) and NAME.counts [1, n_mat] (rows seen), optionally NAME.in_sum [n_in, n_mat].
// llama-quantize uses in_sum2 / counts per column (1 where a count is 0) and ignores other
// tensors, so Strata adds NAME.in_abs_sum and NAME.in_abs_max [n_in, n_mat] (AWQ; the maxima for
// activation ranges) and, when asked, NAME.gram [n_in, n_in] (the Gram matrix; a matrix sharing its
// input with LEADER stores the string key strata.imatrix.gram_of.NAME = LEADER instead).
//
// Legacy .dat format (little-endian): i32 n_entries; per entry i32 name length, the name bytes,
// i32 ncall, i32 nval, f32 values[nval] = (sum x^2 / count) * ncall with ncall = ceil(max
// count / chunk size); then optionally i32 chunk count, i32 dataset length and its bytes.
// llama-quantize divides the values by ncall. Read back, sum_sq = values and count = ncall (the
// same importance). An expert tensor's entry holds its experts one after another (nval = n_in *
// n_mat), each divided by its own count and scaled by the one ncall (an expert never routed to:
// 1 * ncall); the file does not say n_mat, so it reads back as one [n_in * n_mat] entry that
// split_experts() cuts once the tensor's shape is known.
//
// Readers treat the file as hostile: any truncation, bad shape, type, count or non-finite value
// is a one-line strata::Error, never a crash or an unbounded allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "calib/activation_stats.h"

namespace strata::calib {

struct CalibrationFile {
  StatsMap stats;
  std::vector<std::string> datasets;
  int64_t chunk_count = 0;
  int64_t chunk_size = 0;
  bool legacy = false;  // read from a .dat file
};

// GGUF (by its magic) or legacy .dat.
CalibrationFile read_calibration_file(const std::string& path);
// The same from bytes in memory (fuzzing, tests); `name` stands for the file in messages.
CalibrationFile parse_calibration_file(const void* data, size_t size, const std::string& name);

// A legacy entry of n_in * n_mat values for a tensor of n_mat matrices of n_in inputs becomes
// n_mat slices of n_in with the entry's count each; other entries are left as they are.
void split_experts(TensorStats& st, int64_t n_in, int64_t n_mat);

// with_gram: also write the Gram matrices (only those finalized).
void write_imatrix_gguf(const CalibrationFile& f, const std::string& path, bool with_gram);
void write_imatrix_dat(const CalibrationFile& f, const std::string& path);

}  // namespace strata::calib
