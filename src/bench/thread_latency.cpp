#include "bench/thread_latency.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace strata::bench {
namespace {

// struct sched_attr of sched_setattr(2); glibc 2.36 has no wrapper or declaration.
struct SchedAttr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;  // for SCHED_OTHER since Linux 6.12: the requested slice in ns
  uint64_t sched_deadline;
  uint64_t sched_period;
  uint32_t sched_util_min;
  uint32_t sched_util_max;
};

}  // namespace

bool request_short_time_slice() {
#ifdef SYS_sched_setattr
  SchedAttr attr{};
  attr.size = sizeof attr;
  attr.sched_policy = SCHED_OTHER;
  attr.sched_nice = 0;
  attr.sched_runtime = 100'000;
  // Keep the thread's nice value: read it first (sched_setattr would reset it to 0).
  SchedAttr current{};
  if (syscall(SYS_sched_getattr, 0, &current, sizeof current, 0) == 0) attr.sched_nice = current.sched_nice;
  return syscall(SYS_sched_setattr, 0, &attr, 0) == 0;
#else
  return false;
#endif
}

}  // namespace strata::bench
