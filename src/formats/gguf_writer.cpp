#include "formats/gguf_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unordered_set>

#include "core/check.h"
#include "formats/gguf_reader.h"
#include "formats/text_escape.h"

namespace strata {
namespace {

template <typename T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

void put_value(std::string& out, const GgufValue& v, const std::string& key);

void put_array(std::string& out, const GgufArray& a, const std::string& key) {
  put<uint32_t>(out, static_cast<uint32_t>(a.elem_type));
  put<uint64_t>(out, a.size());
  switch (a.elem_type) {
    case GgufType::STRING:
      for (const auto& s : a.strings) put_string(out, s);
      return;
    case GgufType::FLOAT32:
      for (const float f : a.f32) put(out, f);
      return;
    case GgufType::INT32:
      for (const int32_t i : a.i32) put(out, i);
      return;
    default:
      for (const GgufValue& e : a.values) {
        if (e.type() != a.elem_type)
          STRATA_THROW("metadata key '", key, "': array of ", gguf_type_name(a.elem_type), " holds a ",
                       gguf_type_name(e.type()));
        put_value(out, e, key);
      }
  }
}

void put_value(std::string& out, const GgufValue& v, const std::string& key) {
  const auto& s = v.storage();
  switch (v.type()) {
    case GgufType::UINT8:
      return put(out, std::get<uint8_t>(s));
    case GgufType::INT8:
      return put(out, std::get<int8_t>(s));
    case GgufType::UINT16:
      return put(out, std::get<uint16_t>(s));
    case GgufType::INT16:
      return put(out, std::get<int16_t>(s));
    case GgufType::UINT32:
      return put(out, std::get<uint32_t>(s));
    case GgufType::INT32:
      return put(out, std::get<int32_t>(s));
    case GgufType::FLOAT32:
      return put(out, std::get<float>(s));
    case GgufType::BOOL:
      return put<uint8_t>(out, std::get<bool>(s) ? 1 : 0);
    case GgufType::STRING:
      return put_string(out, std::get<std::string>(s));
    case GgufType::ARRAY:
      return put_array(out, *std::get<std::shared_ptr<const GgufArray>>(s), key);
    case GgufType::UINT64:
      return put(out, std::get<uint64_t>(s));
    case GgufType::INT64:
      return put(out, std::get<int64_t>(s));
    case GgufType::FLOAT64:
      return put(out, std::get<double>(s));
  }
  STRATA_THROW("metadata key '", key, "': invalid value type ", static_cast<uint32_t>(v.type()));
}

uint64_t align_up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

// A file written under a temporary name and renamed over the target by commit(); removed if
// never committed.
class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path) : path_(path), tmp_(path + ".tmp-XXXXXX") {
    const int fd = ::mkstemp(tmp_.data());
    if (fd < 0) STRATA_THROW(path, ": cannot create a temporary file next to it: ", std::strerror(errno));
    ::fchmod(fd, 0644);
    file_ = ::fdopen(fd, "wb");
    if (!file_) {
      ::close(fd);
      ::unlink(tmp_.c_str());
      STRATA_THROW(path, ": cannot open for writing: ", std::strerror(errno));
    }
    std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
  }
  ~AtomicFile() {
    if (file_) std::fclose(file_);
    if (!committed_) ::unlink(tmp_.c_str());
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t n) {
    if (n && std::fwrite(data, 1, n, file_) != n)
      STRATA_THROW(path_, ": write failed: ", std::strerror(errno));
    written_ += n;
  }
  void pad_to(uint64_t alignment) {
    static const char zeros[256] = {};
    while (written_ % alignment)
      write(zeros, std::min<uint64_t>(sizeof zeros, alignment - written_ % alignment));
  }
  void commit() {
    const bool flushed = std::fflush(file_) == 0 && ::fsync(::fileno(file_)) == 0;
    const int err = errno;
    const bool closed = std::fclose(file_) == 0;
    file_ = nullptr;
    if (!flushed || !closed) STRATA_THROW(path_, ": write failed: ", std::strerror(flushed ? errno : err));
    if (::rename(tmp_.c_str(), path_.c_str()) != 0)
      STRATA_THROW(path_, ": cannot rename the temporary file into place: ", std::strerror(errno));
    committed_ = true;
  }

 private:
  std::string path_;
  std::string tmp_;
  std::FILE* file_ = nullptr;
  uint64_t written_ = 0;
  bool committed_ = false;
};

}  // namespace

void GgufWriter::add_tensor(std::string name, TensorType type, const std::vector<int64_t>& ne,
                            const void* data) {
  add_entry(std::move(name), type, ne, data, {});
}

void GgufWriter::add_tensor(std::string name, TensorType type, const std::vector<int64_t>& ne,
                            TensorFill fill) {
  STRATA_CHECK(fill, "tensor fill callback is empty");
  add_entry(std::move(name), type, ne, nullptr, std::move(fill));
}

void GgufWriter::add_entry(std::string name, TensorType type, const std::vector<int64_t>& ne,
                           const void* data, TensorFill fill) {
  const std::string label = escape_for_message(name);
  if (name.empty() || name.size() > 64) STRATA_THROW("tensor name '", label, "' must be 1 to 64 bytes");
  for (const Entry& e : tensors_)
    if (e.name == name) STRATA_THROW("duplicate tensor name '", label, "'");
  if (!is_storage_type(type))
    STRATA_THROW("tensor '", label, "': type ", type_name(type), " cannot be stored");
  if (ne.empty() || ne.size() > static_cast<size_t>(kGgufMaxDims))
    STRATA_THROW("tensor '", label, "': ", ne.size(), " dimensions (must be 1 to ", kGgufMaxDims, ")");
  Entry e{std::move(name), type, static_cast<int>(ne.size()), {1, 1, 1, 1}, 0, data, std::move(fill)};
  for (size_t d = 0; d < ne.size(); ++d) {
    if (ne[d] < 0) STRATA_THROW("tensor '", label, "': negative dimension ", ne[d]);
    e.ne[d] = ne[d];
  }
  const TypeTraits& t = type_traits(type);
  if (e.ne[0] % t.block_size != 0)
    STRATA_THROW("tensor '", label, "': row length ", e.ne[0], " is not a multiple of the ", t.name,
                 " block size ", t.block_size);
  uint64_t bytes = static_cast<uint64_t>(e.ne[0] / t.block_size);
  bool overflow = __builtin_mul_overflow(bytes, t.block_bytes, &bytes);
  for (int d = 1; d < 4; ++d)
    overflow |= __builtin_mul_overflow(bytes, static_cast<uint64_t>(e.ne[d]), &bytes);
  if (overflow || bytes > SIZE_MAX / 2) STRATA_THROW("tensor '", label, "': size overflows");
  e.nbytes = static_cast<size_t>(bytes);
  tensors_.push_back(std::move(e));
}

uint64_t GgufWriter::alignment() const {
  const GgufValue* v = metadata_.find("general.alignment");
  if (!v) return kGgufDefaultAlignment;
  const auto a = v->as_uint();
  if (!a || *a == 0 || (*a & (*a - 1)) != 0 || *a > (uint64_t{1} << 30))
    STRATA_THROW("general.alignment ", v->to_display_string(), " is not a power of two up to 2^30");
  return *a;
}

void GgufWriter::write(const std::string& path, const std::function<void(size_t)>& on_tensor) const {
  const uint64_t align = alignment();
  std::string header;
  put<uint32_t>(header, kGgufMagic);
  put<uint32_t>(header, 3);
  put<uint64_t>(header, tensors_.size());
  put<uint64_t>(header, metadata_.size());
  for (const auto& [key, value] : metadata_.entries()) {
    put_string(header, key);
    put<uint32_t>(header, static_cast<uint32_t>(value.type()));
    put_value(header, value, escape_for_message(key));
  }
  uint64_t offset = 0;  // relative to the data section
  for (const Entry& e : tensors_) {
    put_string(header, e.name);
    put<uint32_t>(header, static_cast<uint32_t>(e.n_dims));
    for (int d = 0; d < e.n_dims; ++d) put<uint64_t>(header, static_cast<uint64_t>(e.ne[d]));
    put<uint32_t>(header, static_cast<uint32_t>(e.type));
    put<uint64_t>(header, offset);
    offset = align_up(offset + e.nbytes, align);
  }

  AtomicFile out(path);
  out.write(header.data(), header.size());
  if (!tensors_.empty()) out.pad_to(align);
  std::vector<uint8_t> buffer;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Entry& e = tensors_[i];
    const void* src = e.data;
    if (e.fill) {
      buffer.resize(e.nbytes);
      e.fill(buffer.data(), e.nbytes);
      src = buffer.data();
    }
    out.write(src, e.nbytes);
    out.pad_to(align);
    if (on_tensor) on_tensor(i);
  }
  out.commit();
}

}  // namespace strata
