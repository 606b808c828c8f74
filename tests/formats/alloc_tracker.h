// Counts heap allocations (global operator new, replaced in alloc_tracker.cpp for the whole
// test_formats executable) while an AllocTracker is alive, so a test can assert that parsing a
// hostile file allocated nothing huge before rejecting it.
#pragma once

#include <cstddef>

namespace strata::test {

class AllocTracker {
 public:
  AllocTracker();
  ~AllocTracker();
  AllocTracker(const AllocTracker&) = delete;
  AllocTracker& operator=(const AllocTracker&) = delete;

  size_t largest() const;  // largest single request, bytes
  size_t total() const;    // sum of all requests, bytes
};

}  // namespace strata::test
