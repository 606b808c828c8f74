// The load generator's HTTP client: one thread running an epoll event loop that opens a
// connection per request at its scheduled time (subject to the concurrency limit), streams the
// response and timestamps every received read.
//
// A single thread keeps the client's own cost per streamed chunk at a few microseconds and
// free of lock or thread-wake-up latency, so inter-token gaps of 1 ms are measured faithfully;
// that cost is measured and returned (ClientOverhead). Requests use HTTP/1.1 with
// "Connection: close", one TCP connection each (the connect time is part of TTFT, as it is for
// a client that opens a fresh connection). Plain http:// only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/openai_stream.h"
#include "bench/request_record.h"

namespace strata::bench {

struct HttpTarget {
  std::string host;
  uint16_t port = 80;
  std::string base_path;  // without a trailing slash; "" for the root
};
// "http://HOST[:PORT][/PREFIX]" (IPv6 hosts in brackets); throws strata::Error otherwise.
HttpTarget parse_http_url(std::string_view url);
// base_path + endpoint path, without doubling "/v1" when the URL already ends with it.
std::string request_path(const HttpTarget& target, std::string_view endpoint_path);

struct LoadRequest {
  std::string body;                    // JSON request body
  int64_t estimated_input_tokens = 0;  // used when the server reports no usage
  double scheduled_s = 0.0;            // send time, seconds from the start of the run
};

struct LoadProgress {
  int64_t total = 0, finished = 0, failed = 0, in_flight = 0;
  double elapsed_s = 0.0;
};

struct LoadOptions {
  HttpTarget target;
  std::string path;  // e.g. "/v1/completions"
  EndpointKind endpoint = EndpointKind::kCompletions;
  std::string api_key;          // sent as "Authorization: Bearer ..." when not empty
  int64_t max_concurrency = 0;  // requests in flight at most; 0 = unlimited
  double timeout_s = 600.0;     // per request, from connect to the end of the stream
  // Called from the event loop about every progress_interval_s, and once at the end.
  std::function<void(const LoadProgress&)> on_progress;
  double progress_interval_s = 0.1;
};

// What the client itself costs: the time from a read returning to the loop being ready for the
// next event (HTTP + SSE + JSON parsing and bookkeeping). A timestamp of another stream can be
// late by at most about this much.
struct ClientOverhead {
  int64_t reads = 0;
  double mean_us = 0.0, p99_us = 0.0, max_us = 0.0;  // wall time per read (includes preemption)
  // CPU time of the event-loop thread over the whole run: unlike the wall times above it does
  // not grow when other processes share the cores.
  double cpu_s = 0.0;
};

struct LoadResult {
  std::chrono::steady_clock::time_point start;  // t = 0 of the run (RequestRecord::sent_s etc.)
  std::vector<RequestRecord> records;           // in request order
  double duration_s = 0.0;                      // start of the run -> last request finished
  int64_t peak_in_flight = 0;
  ClientOverhead overhead;
};

// Runs every request; never throws for a failing server (failures are records), only for a
// host name that cannot be resolved or an exhausted system resource.
LoadResult run_load(const std::vector<LoadRequest>& requests, const LoadOptions& options);

}  // namespace strata::bench
