// Read-only memory map of a whole file (model weights are used in place, zero-copy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace strata {

class MappedFile {
 public:
  MappedFile() = default;
  // Throws strata::Error with a clean message if the file cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Tells the kernel the whole pages of [p, p + n) inside the mapping will not be read soon, so
  // they leave the resident set (e.g. weights whose repacked copy is used instead). Reading them
  // later faults them back in from the file. No-op for ranges outside the mapping.
  void drop_pages(const void* p, size_t n) const;
  // Maps the pages of [p, p + n) now, reading them from the file if needed, so that later reads
  // do not fault one page at a time (a fault costs 80-700 us on some virtual machines; a lookup
  // table read at random rows, such as the token embedding, would pay one per new row). No-op
  // for ranges outside the mapping.
  void populate(const void* p, size_t n) const;

 private:
  void reset();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace strata
