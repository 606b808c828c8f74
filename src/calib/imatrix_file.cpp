#include "calib/imatrix_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "core/check.h"
#include "core/mapped_file.h"
#include "formats/gguf_reader.h"
#include "formats/gguf_writer.h"
#include "formats/text_escape.h"

namespace strata::calib {
namespace {

constexpr const char* kGramOfPrefix = "strata.imatrix.gram_of.";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// ---- legacy .dat

class ByteReader {
 public:
  ByteReader(const uint8_t* p, size_t n, const std::string& name) : p_(p), n_(n), name_(name) {}
  size_t left() const { return n_ - pos_; }
  bool at_end() const { return pos_ == n_; }
  int32_t i32(const char* what) {
    if (left() < 4) STRATA_THROW(name_, ": truncated imatrix file (", what, ")");
    int32_t v;
    std::memcpy(&v, p_ + pos_, 4);
    pos_ += 4;
    return v;
  }
  const uint8_t* bytes(size_t n, const char* what) {
    if (left() < n) STRATA_THROW(name_, ": truncated imatrix file (", what, ")");
    const uint8_t* r = p_ + pos_;
    pos_ += n;
    return r;
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  const std::string& name_;
};

CalibrationFile parse_legacy(const uint8_t* data, size_t size, const std::string& name) {
  ByteReader r(data, size, name);
  CalibrationFile f;
  f.legacy = true;
  const int32_t n_entries = r.i32("entry count");
  // Each entry takes at least 16 bytes: a hostile count cannot make us loop or allocate.
  if (n_entries < 1 || static_cast<uint64_t>(n_entries) > r.left() / 16)
    STRATA_THROW(name, ": not an imatrix file (", n_entries, " entries in ", size, " bytes)");
  for (int32_t e = 0; e < n_entries; ++e) {
    const int32_t len = r.i32("name length");
    if (len < 1 || static_cast<size_t>(len) > r.left())
      STRATA_THROW(name, ": entry ", e, " has a bad name length ", len);
    const uint8_t* s = r.bytes(static_cast<size_t>(len), "name");
    std::string tensor(reinterpret_cast<const char*>(s), static_cast<size_t>(len));
    if (tensor.find('\0') != std::string::npos) STRATA_THROW(name, ": entry ", e, " has a NUL in its name");
    const int32_t ncall = r.i32("call count");
    const int32_t nval = r.i32("value count");
    if (nval < 1 || static_cast<size_t>(nval) > r.left() / 4)
      STRATA_THROW(name, ": entry '", escape_for_message(tensor), "' has a bad value count ", nval);
    if (ncall < 0) STRATA_THROW(name, ": entry '", escape_for_message(tensor), "' has a negative call count");
    const uint8_t* v = r.bytes(static_cast<size_t>(nval) * 4, "values");
    TensorStats st;
    st.n_in = nval;
    st.n_mat = 1;
    st.sum_sq.resize(static_cast<size_t>(nval));
    for (int32_t i = 0; i < nval; ++i) {
      float x;
      std::memcpy(&x, v + 4 * i, 4);
      if (!std::isfinite(x) || x < 0)
        STRATA_THROW(name, ": entry '", escape_for_message(tensor), "' has a bad value ", x);
      st.sum_sq[static_cast<size_t>(i)] = x;
    }
    // llama-quantize divides by ncall, or keeps the values when it is 0.
    st.count.assign(1, ncall > 0 ? static_cast<double>(ncall) : 1.0);
    st.gram.resize(1);
    if (!f.stats.emplace(tensor, std::move(st)).second)
      STRATA_THROW(name, ": entry '", escape_for_message(tensor), "' appears twice");
  }
  if (!r.at_end()) {  // optional trailer: chunk count and dataset name
    f.chunk_count = std::max<int32_t>(0, r.i32("chunk count"));
    const int32_t len = r.i32("dataset length");
    if (len < 0 || static_cast<size_t>(len) > r.left()) STRATA_THROW(name, ": bad dataset name length ", len);
    const uint8_t* s = r.bytes(static_cast<size_t>(len), "dataset");
    f.datasets.emplace_back(reinterpret_cast<const char*>(s), static_cast<size_t>(len));
  }
  return f;
}

// ---- GGUF

const float* f32_data(const TensorInfo& t, const std::string& name) {
  if (t.type != TensorType::F32)
    STRATA_THROW(name, ": tensor '", t.name, "' is ", type_name(t.type), ", not f32");
  return static_cast<const float*>(t.data);
}

std::vector<double> to_double(const TensorInfo& t, const std::string& name, bool allow_negative) {
  const float* p = f32_data(t, name);
  std::vector<double> out(static_cast<size_t>(t.n_elements()));
  for (size_t i = 0; i < out.size(); ++i) {
    float v;
    std::memcpy(&v, p + i, 4);  // GGUF data is aligned, but a hostile alignment key may not be
    if (!std::isfinite(v) || (!allow_negative && v < 0))
      STRATA_THROW(name, ": tensor '", t.name, "' has a bad value ", v);
    out[i] = v;
  }
  return out;
}

struct Parts {
  const TensorInfo* sum2 = nullptr;
  const TensorInfo* counts = nullptr;
  const TensorInfo* sum = nullptr;
  const TensorInfo* abs_sum = nullptr;
  const TensorInfo* abs_max = nullptr;
  const TensorInfo* gram = nullptr;
};

void check_matrix_shape(const TensorInfo& t, int64_t n_in, int64_t n_mat, const std::string& name) {
  if (t.n_dims > 2 || t.ne[0] != n_in || t.ne[1] != n_mat)
    STRATA_THROW(name, ": tensor '", t.name, "' has shape [", t.ne[0], ", ", t.ne[1], "], expected [", n_in,
                 ", ", n_mat, "]");
}

TensorStats entry_stats(const std::string& tensor, const Parts& p, const std::string& name) {
  if (!p.sum2 || !p.counts)
    STRATA_THROW(name, ": mismatched sums and counts for '", escape_for_message(tensor), "'");
  const TensorInfo& s2 = *p.sum2;
  if (s2.n_dims > 2 || s2.ne[0] < 1 || s2.ne[1] < 1)
    STRATA_THROW(name, ": tensor '", s2.name, "' must be 2-D [n_in, n_mat]");
  const int64_t n_in = s2.ne[0], n_mat = s2.ne[1];
  if (n_mat > 65536) STRATA_THROW(name, ": tensor '", s2.name, "' has ", n_mat, " experts");
  if (p.counts->n_elements() != n_mat)
    STRATA_THROW(name, ": tensor '", p.counts->name, "' has ", p.counts->n_elements(), " counts for ", n_mat,
                 " matrices");
  TensorStats st;
  st.n_in = n_in;
  st.n_mat = static_cast<int>(n_mat);
  st.sum_sq = to_double(s2, name, false);
  st.count = to_double(*p.counts, name, false);
  st.gram.resize(static_cast<size_t>(n_mat));
  if (p.sum) {
    check_matrix_shape(*p.sum, n_in, n_mat, name);
    st.sum = to_double(*p.sum, name, true);
  }
  if (p.abs_sum) {
    check_matrix_shape(*p.abs_sum, n_in, n_mat, name);
    st.sum_abs = to_double(*p.abs_sum, name, false);
  }
  if (p.abs_max) {
    check_matrix_shape(*p.abs_max, n_in, n_mat, name);
    const std::vector<double> m = to_double(*p.abs_max, name, false);
    st.abs_max.assign(m.begin(), m.end());
  }
  if (p.gram) {
    if (n_mat != 1)
      STRATA_THROW(name, ": tensor '", p.gram->name, "': Gram matrices of experts are not stored");
    check_matrix_shape(*p.gram, n_in, n_in, name);
    auto g = std::make_shared<GramMatrix>(n_in);
    const float* src = f32_data(*p.gram, name);
    std::memcpy(g->g.data(), src, g->bytes());
    for (float v : g->g)
      if (!std::isfinite(v)) STRATA_THROW(name, ": tensor '", p.gram->name, "' has a non-finite value");
    g->count = st.count[0] < 9e18 ? static_cast<int64_t>(st.count[0]) : std::numeric_limits<int64_t>::max();
    g->finalized = true;
    st.gram[0] = std::move(g);
  }
  return st;
}

CalibrationFile parse_gguf(std::unique_ptr<GgufFile> gguf, const std::string& name) {
  const Metadata& md = gguf->metadata();
  CalibrationFile f;
  const GgufArray* datasets = md.get_array("imatrix.datasets");
  const auto chunk_count = md.get_int("imatrix.chunk_count");
  const auto chunk_size = md.get_int("imatrix.chunk_size");
  // llama-quantize requires all three keys.
  if (!datasets || !chunk_count || !chunk_size)
    STRATA_THROW(name,
                 ": missing imatrix metadata (imatrix.datasets, imatrix.chunk_count, imatrix.chunk_size)");
  if (datasets->elem_type != GgufType::STRING)
    STRATA_THROW(name, ": imatrix.datasets is not an array of strings");
  f.datasets = datasets->strings;
  f.chunk_count = *chunk_count;
  f.chunk_size = *chunk_size;

  std::map<std::string, Parts> parts;
  const std::pair<const char*, const TensorInfo * Parts::*> kSuffixes[] = {
      {".in_sum2", &Parts::sum2},       {".counts", &Parts::counts},      {".in_sum", &Parts::sum},
      {".in_abs_sum", &Parts::abs_sum}, {".in_abs_max", &Parts::abs_max}, {".gram", &Parts::gram},
  };
  for (const TensorInfo& t : gguf->tensors()) {
    for (const auto& [suffix, member] : kSuffixes) {
      if (!ends_with(t.name, suffix)) continue;
      const TensorInfo*& slot = parts[t.name.substr(0, t.name.size() - std::strlen(suffix))].*member;
      if (slot) STRATA_THROW(name, ": tensor '", t.name, "' appears twice");
      slot = &t;
      break;
    }
  }
  if (parts.empty()) STRATA_THROW(name, ": no imatrix data in the file");
  for (const auto& [tensor, p] : parts) f.stats.emplace(tensor, entry_stats(tensor, p, name));
  // Shared Gram matrices.
  for (auto& [tensor, st] : f.stats) {
    const auto leader = md.get_string(kGramOfPrefix + tensor);
    if (!leader) continue;
    const auto it = f.stats.find(*leader);
    if (it == f.stats.end() || !it->second.gram_of(0) || it->second.n_in != st.n_in || st.gram_of(0))
      STRATA_THROW(name, ": '", escape_for_message(tensor), "' shares the Gram matrix of '",
                   escape_for_message(*leader), "', which it cannot");
    st.gram[0] = it->second.gram[0];
    st.gram_leader = *leader;
  }
  return f;
}

// Keeps the mapped or copied bytes alive as long as the parsed GGUF needs them.
CalibrationFile parse_bytes(const uint8_t* data, size_t size, const std::string& name) {
  uint32_t magic = 0;
  if (size >= 4) std::memcpy(&magic, data, 4);
  if (magic == kGgufMagic) {
    auto gguf = GgufFile::parse(data, size, name);
    return parse_gguf(std::move(gguf), name);
  }
  return parse_legacy(data, size, name);
}

std::vector<float> as_floats(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

}  // namespace

CalibrationFile parse_calibration_file(const void* data, size_t size, const std::string& name) {
  return parse_bytes(static_cast<const uint8_t*>(data), size, name);
}

CalibrationFile read_calibration_file(const std::string& path) {
  const MappedFile map(path);
  return parse_bytes(static_cast<const uint8_t*>(map.data()), map.size(), path);
}

void write_imatrix_gguf(const CalibrationFile& f, const std::string& path, bool with_gram) {
  GgufWriter w;
  Metadata& md = w.metadata();
  md.add("general.type", GgufValue::of_string("imatrix"));
  GgufArray datasets;
  datasets.elem_type = GgufType::STRING;
  datasets.strings = f.datasets.empty() ? std::vector<std::string>{"unknown"} : f.datasets;
  md.add("imatrix.datasets", GgufValue::of_array(std::move(datasets)));
  md.add("imatrix.chunk_count", GgufValue::of_u32(static_cast<uint32_t>(f.chunk_count)));
  md.add("imatrix.chunk_size", GgufValue::of_u32(static_cast<uint32_t>(f.chunk_size)));
  std::vector<std::vector<float>> keep;  // tensor data lives until write() returns
  keep.reserve(f.stats.size() * 5);
  auto add = [&](const std::string& tensor, std::vector<float> v, int64_t ne0, int64_t ne1) {
    keep.push_back(std::move(v));
    w.add_tensor(tensor, TensorType::F32, {ne0, ne1}, keep.back().data());
  };
  for (const auto& [tensor, st] : f.stats) {  // std::map: name order, as llama-imatrix writes
    add(tensor + ".in_sum2", as_floats(st.sum_sq), st.n_in, st.n_mat);
    add(tensor + ".counts", as_floats(st.count), 1, st.n_mat);
    if (!st.sum.empty()) add(tensor + ".in_sum", as_floats(st.sum), st.n_in, st.n_mat);
    if (!st.sum_abs.empty()) add(tensor + ".in_abs_sum", as_floats(st.sum_abs), st.n_in, st.n_mat);
    if (!st.abs_max.empty()) add(tensor + ".in_abs_max", st.abs_max, st.n_in, st.n_mat);
    if (!with_gram || st.n_mat != 1 || !st.gram_of(0) || !st.gram_of(0)->finalized) continue;
    if (!st.gram_leader.empty() && f.stats.count(st.gram_leader))
      md.add(kGramOfPrefix + tensor, GgufValue::of_string(st.gram_leader));
    else
      w.add_tensor(tensor + ".gram", TensorType::F32, {st.n_in, st.n_in}, st.gram_of(0)->g.data());
  }
  w.write(path);
}

void split_experts(TensorStats& st, int64_t n_in, int64_t n_mat) {
  if (st.n_mat != 1 || n_mat <= 1 || n_in <= 0 || st.n_in != n_in * n_mat || n_mat > 65536) return;
  TensorStats out(n_in, static_cast<int>(n_mat));
  out.sum_sq = st.sum_sq;
  out.count.assign(static_cast<size_t>(n_mat), st.count[0]);
  auto keep = [&](const auto& v, auto& dst) {
    if (v.size() == static_cast<size_t>(n_in * n_mat))
      dst.assign(v.begin(), v.end());
    else
      dst.clear();
  };
  keep(st.sum, out.sum);
  keep(st.sum_abs, out.sum_abs);
  keep(st.abs_max, out.abs_max);
  st = std::move(out);
}

void write_imatrix_dat(const CalibrationFile& f, const std::string& path) {
  std::string out;
  auto put_i32 = [&](int64_t v) {
    const auto x = static_cast<int32_t>(v);
    out.append(reinterpret_cast<const char*>(&x), 4);
  };
  const int64_t chunk = std::max<int64_t>(1, f.chunk_size);
  put_i32(static_cast<int64_t>(f.stats.size()));
  for (const auto& [tensor, st] : f.stats) {
    put_i32(static_cast<int64_t>(tensor.size()));
    out += tensor;
    // One call count for all experts: from the most used one, as llama-imatrix does.
    const double count = *std::max_element(st.count.begin(), st.count.end());
    const int64_t ncall =
        std::max<int64_t>(1, static_cast<int64_t>(std::ceil(count / static_cast<double>(chunk))));
    put_i32(ncall);
    put_i32(st.n_in * st.n_mat);
    for (int64_t e = 0; e < st.n_mat; ++e) {
      const double c = st.count[static_cast<size_t>(e)];
      for (int64_t i = 0; i < st.n_in; ++i) {
        // Partial data (a matrix or expert never reached): llama-imatrix stores 1 (times ncall).
        const float v = c > 0
                            ? static_cast<float>(st.sum_sq[static_cast<size_t>(e * st.n_in + i)] / c * ncall)
                            : static_cast<float>(st.n_mat > 1 ? ncall : 1);
        out.append(reinterpret_cast<const char*>(&v), 4);
      }
    }
  }
  put_i32(f.chunk_count);
  const std::string dataset = f.datasets.empty() ? "" : f.datasets.back();
  put_i32(static_cast<int64_t>(dataset.size()));
  out += dataset;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
    o.write(out.data(), static_cast<std::streamsize>(out.size()));
    if (!o) STRATA_THROW(path, ": cannot write");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    STRATA_THROW(path, ": cannot rename the temporary file into place");
}

}  // namespace strata::calib
