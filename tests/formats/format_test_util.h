// Helpers shared by the formats tests: temp directories, a byte builder for hand-made GGUF
// images (written field by field, independent of GgufWriter), CRC-32 and hex.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace strata::test {

// A fresh directory under $TMPDIR, removed with its content on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "strata-formats-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void write_bytes(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

// Little-endian byte builder.
struct ByteBuilder {
  std::string buf;
  template <typename T>
  ByteBuilder& put(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    buf.append(b, sizeof(T));
    return *this;
  }
  ByteBuilder& u8(uint8_t v) { return put(v); }
  ByteBuilder& u32(uint32_t v) { return put(v); }
  ByteBuilder& i32(int32_t v) { return put(v); }
  ByteBuilder& u64(uint64_t v) { return put(v); }
  ByteBuilder& f32(float v) { return put(v); }
  ByteBuilder& str(std::string_view s) {
    u64(s.size());
    buf.append(s);
    return *this;
  }
  ByteBuilder& raw(std::string_view s) {
    buf.append(s);
    return *this;
  }
  ByteBuilder& pad_to(size_t alignment) {
    while (buf.size() % alignment) buf.push_back('\0');
    return *this;
  }
  size_t size() const { return buf.size(); }
};

inline uint32_t crc32(const void* data, size_t n) {
  static const auto table = [] {
    std::vector<uint32_t> t(256);
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xffffffffu;
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

inline std::string to_hex(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() * 2);
  for (const char c : s) {
    out += kHex[static_cast<unsigned char>(c) >> 4];
    out += kHex[static_cast<unsigned char>(c) & 15];
  }
  return out;
}

}  // namespace strata::test

#include <nlohmann/json.hpp>

namespace strata::test {

struct SafetensorsEntry {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

// A safetensors image with the tensors stored back to back in the given order (header padded
// with spaces to a multiple of 8, as the reference writer does).
inline std::string make_safetensors(const std::vector<SafetensorsEntry>& entries) {
  nlohmann::json header = nlohmann::json::object();
  size_t offset = 0;
  for (const auto& e : entries) {
    header[e.name] = {
        {"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {offset, offset + e.bytes.size()}}};
    offset += e.bytes.size();
  }
  header["__metadata__"] = {{"format", "pt"}};
  std::string h = header.dump();
  while ((h.size() + 8) % 8) h += ' ';
  ByteBuilder b;
  b.u64(h.size()).raw(h);
  for (const auto& e : entries) b.raw(e.bytes);
  return b.buf;
}

// n values as raw bytes of type T.
template <typename T>
std::string raw_values(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

}  // namespace strata::test
