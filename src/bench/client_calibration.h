// `strata bench serve --calibrate`: measures the client's own error and overhead against the
// in-process FakeOpenAiServer, which sends tokens at exactly known times.
//
// Two scenarios per concurrency level: tokens 1 ms apart (the measured ITL should be 1 ms; the
// deviation is what client + loopback + scheduling add) and tokens as fast as the server can
// write them (how many chunks per second the client absorbs, and its cost per read).
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "bench/metrics.h"
#include "bench/stream_client.h"

namespace strata::bench {

struct CalibrationRow {
  int64_t concurrency = 1;
  double nominal_itl_ms = 0.0;  // 0: as fast as possible
  double nominal_ttft_ms = 0.0;
  Distribution itl_ms;            // measured
  Distribution ttft_ms;           // measured
  double chunks_per_s = 0.0;      // content chunks received per second of the run
  double cpu_us_per_chunk = 0.0;  // the client's CPU time per content chunk
  int64_t failed = 0;
  ClientOverhead overhead;
};

std::vector<CalibrationRow> calibrate_client(const std::vector<int64_t>& levels, int64_t tokens_per_request);
void print_calibration(std::ostream& out, const std::vector<CalibrationRow>& rows);

// How well requests leave on schedule: n one-token requests at Poisson arrivals of `rate` per
// second against the fake server.
struct SendScheduleRow {
  double rate = 0.0;
  int64_t requests = 0;
  Distribution lateness_ms;   // actual send - scheduled send
  Distribution gap_error_ms;  // |gap between receipts at the server - scheduled gap|
};
SendScheduleRow calibrate_send_schedule(double rate, int64_t requests);
void print_send_schedule(std::ostream& out, const SendScheduleRow& row);

}  // namespace strata::bench
