#include "alloc_tracker.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<int> g_armed{0};
std::atomic<size_t> g_largest{0};
std::atomic<size_t> g_total{0};

void record(size_t n) {
  if (!g_armed.load(std::memory_order_relaxed)) return;
  g_total.fetch_add(n, std::memory_order_relaxed);
  size_t prev = g_largest.load(std::memory_order_relaxed);
  while (n > prev && !g_largest.compare_exchange_weak(prev, n, std::memory_order_relaxed)) {
  }
}

void* allocate(size_t n) {
  record(n);
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  return p;
}

}  // namespace

// Replacements of the plain (and nothrow) forms, allocating with std::malloc; the deletes below
// and the library's remaining default forms release with std::free.
void* operator new(size_t n) {
  return allocate(n);
}
void* operator new[](size_t n) {
  return allocate(n);
}
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  record(n);
  return std::malloc(n ? n : 1);
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  record(n);
  return std::malloc(n ? n : 1);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, size_t) noexcept {
  std::free(p);
}

namespace strata::test {

AllocTracker::AllocTracker() {
  g_largest = 0;
  g_total = 0;
  g_armed = 1;
}
AllocTracker::~AllocTracker() {
  g_armed = 0;
}
size_t AllocTracker::largest() const {
  return g_largest;
}
size_t AllocTracker::total() const {
  return g_total;
}

}  // namespace strata::test
