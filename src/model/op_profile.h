// Where forward time goes, by op category, and the timer the decoder's blocks record it with.
#pragma once

#include <chrono>
#include <cstdint>

namespace strata {

// Filled only while profiling is on.
struct OpProfile {
  enum Op { Embed, Norm, Matmul, Rope, Attention, Elementwise, Output, Moe, kNumOps };
  double seconds[kNumOps] = {};
  int64_t calls[kNumOps] = {};
  static const char* name(int op);
};

// Times a callable into an OpProfile when profiling is on (a clock read per op), else just
// calls it.
class OpTimer {
 public:
  OpTimer(bool on, OpProfile& profile) : on_(on), profile_(profile) {}
  template <typename F>
  void operator()(OpProfile::Op op, F&& f) {
    if (!on_) {
      f();
      return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    f();
    profile_.seconds[op] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++profile_.calls[op];
  }

 private:
  bool on_;
  OpProfile& profile_;
};

}  // namespace strata
