// Busy-waiting that degrades gracefully when the machine is oversubscribed.
//
// Compute threads hand work to each other every few microseconds, so they spin rather than
// sleep. But when more threads are runnable than there are cores (a busy machine, tests run in
// parallel), a pure spin can burn a whole time slice waiting for a thread that is not even
// scheduled; yielding after a short spin lets that thread run.
#pragma once

#include <sched.h>

namespace strata {

// The CPU's spin-loop hint (x86 pause, Arm yield): a cheaper, friendlier busy iteration.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

template <typename Pred>
inline void spin_until(Pred&& done) {
  for (int i = 0; !done(); ++i) {
    if (i < 2048)
      cpu_relax();
    else
      sched_yield();
  }
}

}  // namespace strata
