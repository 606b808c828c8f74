#include "backend/cpu/weight_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <new>
#include <utility>

#include "core/check.h"

namespace strata::cpu {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

}  // namespace

// Over-map by one huge page to start on a 2 MiB boundary (THP needs aligned ranges), then unmap
// the slack so the mapping ends at the last 4 KiB page of the data: a huge page never covers the
// tail, and a small matrix does not cost a whole 2 MiB of resident memory.
WeightMemory::WeightMemory(size_t bytes) {
  STRATA_CHECK(bytes > 0);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t used = (bytes + page - 1) / page * page;
  const size_t over = used + kHugePage;
  void* p = mmap(nullptr, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t base = reinterpret_cast<uintptr_t>(p);
  const uintptr_t start = (base + kHugePage - 1) / kHugePage * kHugePage;
  if (start > base) munmap(p, start - base);
  const uintptr_t end = base + over;
  if (end > start + used) munmap(reinterpret_cast<void*>(start + used), end - (start + used));
  data_ = reinterpret_cast<uint8_t*>(start);
  bytes_ = bytes;
  mapped_ = used;
  madvise(data_, used, MADV_HUGEPAGE);
}

WeightMemory::~WeightMemory() {
  release();
}

WeightMemory::WeightMemory(WeightMemory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

WeightMemory& WeightMemory::operator=(WeightMemory&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

void WeightMemory::release() {
  if (data_) munmap(data_, mapped_);
  data_ = nullptr;
  bytes_ = mapped_ = 0;
}

}  // namespace strata::cpu
