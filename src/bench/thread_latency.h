// Prompt wake-ups for the timing threads of the load generator.
//
// On a busy machine a thread that sleeps until the next token or arrival is, on Linux's EEVDF
// scheduler, often left waiting for the running task's slice to end (about one 4 ms tick),
// which would show up as fake latency. Asking for a short slice gives the thread an earlier
// virtual deadline, so it preempts CPU-bound work when it wakes; its share of CPU time is
// unchanged. Unprivileged; supported since Linux 6.12, a harmless no-op before.
#pragma once

namespace strata::bench {

// Requests a 100 us time slice for the calling thread; false where the kernel refused.
bool request_short_time_slice();

}  // namespace strata::bench
